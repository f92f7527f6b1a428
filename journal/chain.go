package journal

import (
	"bytes"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/symbi-dev/symbi/seal"
)

// The chain's MAC domains (seal.Key.Sum): the run's anchor, then each line.
const (
	chainDomain  = "journal"
	anchorDomain = "journal-run"
)

// macField opens the MAC that ends every signed line:
// {"seq":1,…,"data":{…},"mac":"<64 hex digits>"}
const macField = `,"mac":"`

// macSuffixLen is the length of the signed line's end after its body:
// ,"mac":"<64 hex>"}
const macSuffixLen = len(macField) + 2*seal.MACSize + len(`"}`)

// ErrUnsigned is wrapped by the LineError (line 1) for a journal whose first
// line carries no MAC: written by a symbi from before the chain, or stripped
// of its MACs. Nothing in it can be verified, so it is never resumed.
var ErrUnsigned = errors.New("the journal is unsigned (no MAC on its first line): written by a symbi from before journals were signed, or stripped of its MACs; its content cannot be verified")

// ErrTampered is wrapped by the LineError for the first line whose MAC does
// not verify: the line was changed, or lines before it were removed, added
// or moved, or the journal was copied from another run, or the state
// directory's key is not the one that signed it.
var ErrTampered = errors.New("the MAC does not match")

// ErrUnverifiable is wrapped by the LineError for a signed line when there
// is no key to check it with: the state directory's key is missing or
// unreadable (the error says which).
var ErrUnverifiable = errors.New("cannot verify the journal")

// chain is a journal's running MAC. Each line's MAC covers the previous
// line's MAC and the line's body (everything before ,"mac":), so editing,
// removing, adding or moving any complete line breaks the chain at that
// line. The first line chains to an anchor made from the run id, so a
// journal moved to another run's directory does not verify either.
type chain struct {
	mac  *seal.MAC
	prev [seal.MACSize]byte
	// sum and hexed are scratch space: in the chain, which lives on the
	// heap already, they cost no allocation per line.
	sum   [seal.MACSize]byte
	hexed [2 * seal.MACSize]byte
	// keyErr is why there is no key (the reader's): set, every signed line
	// fails with ErrUnverifiable and it, rather than with ErrTampered.
	keyErr error
}

func newChain(key seal.Key, runID string) *chain {
	c := &chain{mac: key.MAC(chainDomain)}
	copy(c.prev[:], key.Sum(anchorDomain, []byte(runID)))
	return c
}

// sealLine ends the line whose body is buf's bytes from start: it appends
// the MAC and the closing brace and newline, and advances the chain.
func (c *chain) sealLine(buf *bytes.Buffer, start int) {
	c.mac.Sum(c.sum[:0], c.prev[:], buf.Bytes()[start:])
	hex.Encode(c.hexed[:], c.sum[:])
	buf.WriteString(macField)
	buf.Write(c.hexed[:])
	buf.WriteString("\"}\n")
	c.prev = c.sum
}

// check verifies one complete line (without its newline), the n-th, and
// advances the chain.
func (c *chain) check(line []byte, n int) error {
	body, mac, ok := splitMAC(line)
	switch {
	case !ok && n == 1:
		return ErrUnsigned
	case !ok:
		return fmt.Errorf("%w: the line has no MAC, but the lines before it are signed", ErrTampered)
	case c.keyErr != nil:
		return fmt.Errorf("%w: %w", ErrUnverifiable, c.keyErr)
	}
	c.mac.Sum(c.sum[:0], c.prev[:], body)
	if !hmac.Equal(c.sum[:], mac[:]) {
		return fmt.Errorf("%w: this line, or the order of the lines before it, is not what symbi wrote", ErrTampered)
	}
	c.prev = c.sum
	return nil
}

// splitMAC splits a signed line into its body and its MAC; ok is false
// when the line does not end with a MAC in the one form the writer writes
// (lower-case hex), so no other spelling of a line verifies.
func splitMAC(line []byte) (body []byte, mac [seal.MACSize]byte, ok bool) {
	if len(line) < macSuffixLen+1 {
		return nil, mac, false
	}
	end := line[len(line)-macSuffixLen:]
	if !bytes.HasPrefix(end, []byte(macField)) || !bytes.HasSuffix(end, []byte(`"}`)) {
		return nil, mac, false
	}
	hexed := end[len(macField) : len(end)-2]
	for _, c := range hexed {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return nil, mac, false
		}
	}
	hex.Decode(mac[:], hexed) // cannot fail: 64 lower-case hex digits
	return line[:len(line)-macSuffixLen], mac, true
}
