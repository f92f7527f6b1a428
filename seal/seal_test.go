package seal

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenCreatesOnceAndReadsBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	k1, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", st.Mode().Perm())
	}
	k2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k1.Sign("d", []byte("m")) != k2.Sign("d", []byte("m")) {
		t.Error("a second Open made a different key")
	}
}

func TestOpenConcurrentlyAgrees(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	sigs := make([]string, 8)
	for i := range sigs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := Open(dir)
			if err != nil {
				t.Error(err)
				return
			}
			sigs[i] = k.Sign("d", []byte("m"))
		}()
	}
	wg.Wait()
	for _, s := range sigs[1:] {
		if s != sigs[0] {
			t.Fatal("concurrent Opens ended with different keys")
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".key-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestReadRefusesWideOrBrokenKeys(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Fatalf("Read of an empty dir: %v", err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, KeyFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key: %v", err)
	}
	if err := os.WriteFile(path, []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("a malformed key: %v", err)
	}
}

func TestSignVerify(t *testing.T) {
	k, err := FromBytes(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := FromBytes([]byte(strings.Repeat("x", 32)))
	mac := k.Sign("approval", []byte("run/req/args"))
	switch {
	case !k.Verify("approval", []byte("run/req/args"), mac):
		t.Error("own MAC refused")
	case k.Verify("journal", []byte("run/req/args"), mac):
		t.Error("MAC accepted in another domain")
	case k.Verify("approval", []byte("run/req/argz"), mac):
		t.Error("MAC accepted for another message")
	case other.Verify("approval", []byte("run/req/args"), mac):
		t.Error("MAC accepted under another key")
	case k.Verify("approval", []byte("run/req/args"), "zz"+mac[2:]):
		t.Error("non-hex MAC accepted")
	case (Key{}).Verify("approval", []byte("run/req/args"), mac):
		t.Error("the zero key verified a MAC")
	}
	// The domain is separated from the message: "ab"+"c" differs from "a"+"bc".
	if k.Sign("ab", []byte("c")) == k.Sign("a", []byte("bc")) {
		t.Error("domain and message run together")
	}
}

func TestDigest(t *testing.T) {
	if got := Digest([]byte("")); got != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("Digest(\"\") = %s", got)
	}
}

func TestMACEqualsSum(t *testing.T) {
	k, err := FromBytes([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	m := k.MAC("journal")
	for _, parts := range [][][]byte{
		{},
		{[]byte("one")},
		{[]byte("prev"), []byte(`{"seq":1}`)},
		{[]byte("prev"), []byte(`{"seq":2}`)}, // the state is reset between messages
	} {
		var whole []byte
		for _, p := range parts {
			whole = append(whole, p...)
		}
		got := m.Sum(nil, parts...)
		if want := k.Sum("journal", whole); string(got) != string(want) {
			t.Errorf("MAC.Sum(%q) = %x, Key.Sum = %x", whole, got, want)
		}
		if len(got) != MACSize {
			t.Errorf("MAC of %d bytes, want %d", len(got), MACSize)
		}
	}
	if string(m.Sum(nil, []byte("m"))) == string(k.MAC("other").Sum(nil, []byte("m"))) {
		t.Error("two domains give the same MAC")
	}
	dst := make([]byte, 0, MACSize)
	a, b := []byte("a"), []byte("b")
	if n := testing.AllocsPerRun(100, func() { m.Sum(dst, a, b) }); n > 0 {
		t.Errorf("MAC.Sum allocates %v times per message", n)
	}
}
