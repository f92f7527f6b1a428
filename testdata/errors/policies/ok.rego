package symbi.ok

allow if input.action.tool == "calculator"
