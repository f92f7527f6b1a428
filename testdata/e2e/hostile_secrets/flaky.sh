# The flaky tool: fails, quoting its token on stderr, as a tool that
# reports a refused credential might.
cat >/dev/null
printf 'refused: token %s is not valid here\n' "$TOKEN" >&2
exit 1
