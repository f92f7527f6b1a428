# The show_token tool: records the token it received (so the test knows it
# was delivered) and echoes it in its result (so the test can see that the
# journal and the terminal redact it).
cat >/dev/null
printf '%s' "$TOKEN" >"$PROOF_DIR/token"
printf 'the token is %s\n' "$TOKEN"
