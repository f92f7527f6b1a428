package symbi.broken

decision if {
  input.action.tool ==
}
