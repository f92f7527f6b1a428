package seal

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
)

// MACSize is the length in bytes of every MAC the key makes.
const MACSize = sha256.Size

// MAC signs many messages in one domain with one HMAC state, reset between
// messages: the journal signs every line it writes, and a fresh HMAC per
// line would cost more allocations than the line's own encoding. Its Sum
// equals Key.Sum for the same domain and the parts concatenated. A MAC is
// not safe for concurrent use.
type MAC struct {
	h      hash.Hash
	prefix []byte // domain, NUL: what Key.Sum writes before the message
}

// MAC returns a reusable signer for domain. It panics on the zero Key, as
// Sum does.
func (k Key) MAC(domain string) *MAC {
	if !k.set {
		panic("seal: MAC with the zero Key")
	}
	return &MAC{h: hmac.New(sha256.New, k.k[:]), prefix: append([]byte(domain), 0)}
}

// Sum appends to dst the MAC of the parts, concatenated, and returns it.
func (m *MAC) Sum(dst []byte, parts ...[]byte) []byte {
	m.h.Reset()
	m.h.Write(m.prefix)
	for _, p := range parts {
		m.h.Write(p)
	}
	return m.h.Sum(dst)
}
