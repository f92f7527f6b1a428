# The reveal tool: records the token it received (so the test knows it was
# delivered) and prints it, as it is and base64-encoded, in its result.
cat >/dev/null
printf '%s' "$TOKEN" >"$PROOF_DIR/token"
printf 'token %s\nencoded %s\n' "$TOKEN" "$(printf '%s' "$TOKEN" | base64)"
