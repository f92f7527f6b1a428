// Package seal keeps the state directory's secret key and signs with it what
// only symbi itself may write there: approval decisions and journal lines.
// A file that an agent, a tool or anyone without the key wrote or edited does
// not verify, so the reader can tell it apart from one symbi wrote.
//
// The key is 32 random bytes in <state_dir>/key, created on first use with
// permissions 0600 and refused when others can read it. No builtin tool can
// reach the state directory (builtins refuses it on the resolved path), but a
// command tool runs with the user's rights and can: the key protects against
// a hostile model and hostile tool output, not against the local user.
//
// Every MAC is HMAC-SHA256 over a domain name and the message, so a MAC made
// for one purpose never verifies for another.
//
// This package is a leaf: it imports only the standard library.
package seal
