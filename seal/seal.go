package seal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFile is the key's name inside the state directory.
const KeyFile = "key"

// keySize is the key's length in bytes.
const keySize = 32

// ErrNoKey is returned by Read when the state directory holds no key yet.
var ErrNoKey = errors.New("no key in the state directory")

// Key is a state directory's secret. The zero Key is not usable: Sign panics
// on it and Verify refuses everything, so a missing key can never sign.
type Key struct {
	k   [keySize]byte
	set bool
}

// Open returns the key of stateDir, creating the directory (0700) and the key
// (0600) when they do not exist. Two processes opening it at once get the
// same key: it is written to a temporary file and linked into place, and the
// loser reads the winner's.
func Open(stateDir string) (Key, error) {
	k, err := Read(stateDir)
	if !errors.Is(err, ErrNoKey) {
		return k, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return Key{}, fmt.Errorf("state directory: %w", err)
	}
	var b [keySize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	tmp, err := os.CreateTemp(stateDir, ".key-*")
	if err != nil {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write([]byte(hex.EncodeToString(b[:]) + "\n"))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	// CreateTemp makes the file 0600 already; say so anyway, the file's
	// permissions are the key's only protection.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	if err := os.Link(tmp.Name(), filepath.Join(stateDir, KeyFile)); err != nil && !errors.Is(err, fs.ErrExist) {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	return Read(stateDir)
}

// Read returns the key of stateDir without creating one: ErrNoKey when there
// is none, an error when it is malformed or readable by others.
func Read(stateDir string) (Key, error) {
	path := filepath.Join(stateDir, KeyFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Key{}, fmt.Errorf("%w: %s", ErrNoKey, path)
	}
	if err != nil {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Key{}, fmt.Errorf("state key: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Key{}, fmt.Errorf("state key %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return Key{}, fmt.Errorf("state key %s has permissions %04o: others could forge approvals and journals with it; run chmod 600 %s", path, perm, path)
	}
	b := make([]byte, 2*keySize+2)
	n, _ := f.Read(b)
	text := b[:n]
	if n > 0 && text[n-1] == '\n' {
		text = text[:n-1]
	}
	var k Key
	if len(text) != 2*keySize {
		return Key{}, fmt.Errorf("state key %s is malformed (want %d hex digits)", path, 2*keySize)
	}
	if _, err := hex.Decode(k.k[:], text); err != nil {
		return Key{}, fmt.Errorf("state key %s is malformed: %v", path, err)
	}
	k.set = true
	return k, nil
}

// FromBytes makes a key from 32 bytes, for tests and for callers that keep
// the key elsewhere.
func FromBytes(b []byte) (Key, error) {
	if len(b) != keySize {
		return Key{}, fmt.Errorf("a key has %d bytes, not %d", keySize, len(b))
	}
	var k Key
	copy(k.k[:], b)
	k.set = true
	return k, nil
}

// Valid reports whether the key was read or made (the zero Key is not).
func (k Key) Valid() bool { return k.set }

// Sum is the HMAC-SHA256 of msg under the key, in the domain given: the same
// message signed for two domains gives unrelated MACs.
func (k Key) Sum(domain string, msg []byte) []byte {
	if !k.set {
		panic("seal: Sum with the zero Key")
	}
	m := hmac.New(sha256.New, k.k[:])
	m.Write([]byte(domain))
	m.Write([]byte{0})
	m.Write(msg)
	return m.Sum(nil)
}

// Sign is Sum in hex, the form stored in files.
func (k Key) Sign(domain string, msg []byte) string {
	return hex.EncodeToString(k.Sum(domain, msg))
}

// Verify reports whether mac (hex) is the MAC of msg in domain. It takes the
// same time whatever the MAC's content, and refuses everything under the
// zero Key.
func (k Key) Verify(domain string, msg []byte, mac string) bool {
	if !k.set {
		return false
	}
	got, err := hex.DecodeString(mac)
	if err != nil {
		return false
	}
	return hmac.Equal(got, k.Sum(domain, msg))
}

// Digest is the SHA-256 of b in hex, prefixed "sha256:": the form symbi
// shows and records for arguments, plans and files.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
