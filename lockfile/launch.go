package lockfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Executable finds the program argv0 names as the toolbox runs it: a path
// with a separator is relative to dir, a bare name is looked up in PATH;
// every link is followed. The path is given relative to baseDir (slashes)
// when the program lies inside it, so a lock file of a checked-in script
// is the same in every checkout; absolute otherwise.
func Executable(argv0, dir, baseDir string) (string, error) {
	p := argv0
	switch {
	case filepath.IsAbs(p):
	case strings.ContainsRune(p, filepath.Separator) || strings.ContainsRune(p, '/'):
		p = filepath.Join(dir, p)
	default:
		found, err := exec.LookPath(p)
		if err != nil {
			return "", err
		}
		p = found
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", err
	}
	if base, err := filepath.EvalSymlinks(baseDir); err == nil {
		if base, err = filepath.Abs(base); err == nil {
			if rel, err := filepath.Rel(base, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return filepath.ToSlash(rel), nil
			}
		}
	}
	return real, nil
}

// AbsExecutable is the path Executable returned, made absolute again
// against baseDir, for reading the file.
func AbsExecutable(path, baseDir string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(baseDir, filepath.FromSlash(path))
}

// Hasher digests executables, remembering each file's digest in a cache
// file (in the state directory) keyed by what changes when the file does:
// its device, inode, size, modification and change times. A node binary
// is a hundred megabytes, hashed in half a second; a run that checks it
// against the lock reads the cache instead. The zero Hasher hashes every
// time.
type Hasher struct {
	// Cache is the cache file; "" keeps no cache.
	Cache string

	mu sync.Mutex
}

type cacheEntry struct {
	Stamp  string `json:"stamp"`
	SHA256 string `json:"sha256"`
}

// maxCacheEntries bounds the cache file: the oldest entries beyond it go.
const maxCacheEntries = 256

// Digest is "sha256:" and the SHA-256 of the file at path.
func (h *Hasher) Digest(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	stamp := fileStamp(info)
	var cache map[string]cacheEntry
	if h != nil && h.Cache != "" && stamp != "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		if b, err := os.ReadFile(h.Cache); err == nil {
			_ = json.Unmarshal(b, &cache) // a damaged cache is a cold one
		}
		if e, ok := cache[path]; ok && e.Stamp == stamp {
			return e.SHA256, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, f); err != nil {
		return "", err
	}
	digest := "sha256:" + hex.EncodeToString(sum.Sum(nil))
	if h != nil && h.Cache != "" && stamp != "" {
		if cache == nil || len(cache) >= maxCacheEntries {
			cache = map[string]cacheEntry{}
		}
		cache[path] = cacheEntry{Stamp: stamp, SHA256: digest}
		_ = writeCache(h.Cache, cache) // a cache that cannot be written costs time, not safety
	}
	return digest, nil
}

func writeCache(path string, cache map[string]cacheEntry) error {
	b, err := json.Marshal(cache)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".executables-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// A launcher fetches a package and runs it: what it runs is the package
// and version its arguments name, not the executable.
type launcherSpec struct {
	name string
	// sub is the subcommand that runs a package ("dlx" of pnpm), if any.
	sub string
	// valueFlags take a value as the next argument; pkgFlags name the
	// package (npx -p, uvx --from), after which the first positional
	// argument is the command, not the package.
	valueFlags map[string]bool
	pkgFlags   map[string]bool
	pypi       bool // version written pkg==1.2.3 (or pkg@1.2.3 for uvx)
}

var launchers = []launcherSpec{
	{name: "npx", valueFlags: set("--cache", "--userconfig", "-c", "--call", "--registry"), pkgFlags: set("-p", "--package")},
	{name: "pnpm", sub: "dlx", valueFlags: set("--reporter"), pkgFlags: set("--package")},
	{name: "yarn", sub: "dlx", pkgFlags: set("-p", "--package")},
	{name: "bunx", pkgFlags: set("-p", "--package")},
	{name: "bun", sub: "x", pkgFlags: set("-p", "--package")},
	{name: "uvx", valueFlags: set("--with", "--python", "-p", "--index", "--index-url", "--extra-index-url", "--with-requirements"), pkgFlags: set("--from"), pypi: true},
	{name: "uv", sub: "tool run", valueFlags: set("--with", "--python", "-p", "--index", "--index-url", "--extra-index-url", "--with-requirements"), pkgFlags: set("--from"), pypi: true},
	{name: "pipx", sub: "run", valueFlags: set("--python", "--pip-args"), pkgFlags: set("--spec"), pypi: true},
}

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

// Package is the package a launcher's argv runs.
type Package struct {
	Launcher string // npx, uvx, …
	Name     string
	Version  string // as written; "" when none is
	// Pinned: Version is one exact version, not a range, a tag such as
	// "latest", or nothing (which runs whatever is newest today).
	Pinned bool
}

var (
	exactSemver = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	})
	exactPEP440 = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$`)
	})
)

// LauncherPackage reads the package argv runs when argv[0] is npx, uvx or
// another launcher that fetches packages; ok is false for any other
// program, or when no package can be found in the arguments.
func LauncherPackage(argv []string) (Package, bool) {
	if len(argv) == 0 {
		return Package{}, false
	}
	prog := filepath.Base(argv[0])
	prog = strings.TrimSuffix(strings.TrimSuffix(prog, ".cmd"), ".exe")
	for _, l := range launchers {
		if l.name != prog {
			continue
		}
		rest := argv[1:]
		if l.sub != "" {
			sub := strings.Fields(l.sub)
			if len(rest) < len(sub) || strings.Join(rest[:len(sub)], " ") != l.sub {
				return Package{}, false
			}
			rest = rest[len(sub):]
		}
		spec := ""
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if a == "--" {
				if spec == "" && i+1 < len(rest) {
					spec = rest[i+1]
				}
				break
			}
			name, value, hasValue := strings.Cut(a, "=")
			if l.pkgFlags[name] {
				if !hasValue && i+1 < len(rest) {
					value = rest[i+1]
					i++
				}
				spec = value
				break
			}
			if strings.HasPrefix(a, "-") {
				if l.valueFlags[name] && !hasValue {
					i++
				}
				continue
			}
			spec = a
			break
		}
		if spec == "" {
			return Package{}, false
		}
		p := Package{Launcher: l.name}
		if l.pypi {
			p.Name, p.Version, p.Pinned = pypiSpec(spec)
		} else {
			p.Name, p.Version, p.Pinned = npmSpec(spec)
		}
		return p, true
	}
	return Package{}, false
}

// npmSpec splits "@scope/name@1.2.3" or "name@^1" into name and version.
func npmSpec(spec string) (name, version string, pinned bool) {
	at := strings.LastIndexByte(spec, '@')
	if at <= 0 { // no version, or only the scope's @
		return spec, "", false
	}
	name, version = spec[:at], spec[at+1:]
	return name, version, exactSemver().MatchString(version)
}

// pypiSpec splits "name==1.2.3" (or uv's "name@1.2.3") into name and
// version.
func pypiSpec(spec string) (name, version string, pinned bool) {
	if n, v, ok := strings.Cut(spec, "=="); ok {
		return n, v, exactPEP440().MatchString(v)
	}
	if n, v, ok := strings.Cut(spec, "@"); ok && n != "" {
		return n, v, exactPEP440().MatchString(v)
	}
	for _, op := range []string{">=", "<=", "~=", "!=", ">", "<"} {
		if n, v, ok := strings.Cut(spec, op); ok {
			return n, op + v, false
		}
	}
	return spec, "", false
}

// UnpinnedWarning says what an unpinned launch does and how to pin it:
// the argument to write instead, with the version the server reports as a
// likely one.
func UnpinnedWarning(p Package, reported string) string {
	what := "has no version"
	if p.Version != "" {
		what = fmt.Sprintf("names %q, not one exact version", p.Version)
	}
	sep := "@"
	if p.Launcher == "uvx" || p.Launcher == "uv" || p.Launcher == "pipx" {
		sep = "=="
	}
	fix := p.Name + sep + "VERSION"
	hint := ""
	if reported != "" {
		hint = fmt.Sprintf(" (the server reports version %s)", reported)
	}
	return fmt.Sprintf("%s runs %s, which %s: each run may fetch whatever is newest that day. Pin it: write %q in the command%s, then run symbi lock again",
		p.Launcher, p.Name, what, fix, hint)
}
