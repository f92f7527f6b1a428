package knowledge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// Convention is one conventions file: the rules a team wrote down for the
// files under Dir. Dir and Path are slash-separated paths in the file
// system Conventions was given.
type Convention struct {
	Dir  string // the directory the convention applies to
	Path string // the file it was read from
	Text string
}

// ErrBadConventions is wrapped by errors about the arguments of Conventions.
var ErrBadConventions = errors.New("invalid conventions lookup")

// MaxConventionBytes bounds one conventions file, so a stray large file does
// not flood a model's context.
const MaxConventionBytes = 64 << 10

// Conventions collects the conventions that apply in dir, a directory of
// fsys (its root is "."): walking from dir up to and including the root, it
// reads in each directory
//
//	<dir>/<name>.md       first, then
//	<dir>/<name>/*.md     in name order,
//
// nearer directories first, so a convention closer to the work comes before
// (and may refine) a broader one. The walk never leaves fsys, which is how
// a caller confines it: os.DirFS(root), or a file system that refuses some
// paths (the builtins' workspace refuses protected ones). Missing files are
// not an error; unreadable ones, non-UTF-8 ones and ones over
// MaxConventionBytes are.
func Conventions(fsys fs.FS, dir, name string) ([]Convention, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("%w: name %q must be a plain file or directory name", ErrBadConventions, name)
	}
	if dir == "" {
		dir = "."
	}
	if !fs.ValidPath(dir) {
		return nil, fmt.Errorf("%w: %q is not a directory inside the file system (a clean, slash-separated, relative path)", ErrBadConventions, dir)
	}
	var out []Convention
	for d := dir; ; d = path.Dir(d) {
		found, err := conventionsIn(fsys, d, name)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		if d == "." {
			return out, nil
		}
	}
}

func conventionsIn(fsys fs.FS, dir, name string) ([]Convention, error) {
	paths := []string{path.Join(dir, name+".md")}
	var entries []fs.DirEntry
	sub := path.Join(dir, name)
	switch info, err := fs.Stat(fsys, sub); {
	case err == nil && info.IsDir():
		if entries, err = fs.ReadDir(fsys, sub); err != nil {
			return nil, fmt.Errorf("conventions: %w", err)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("conventions: %w", err)
	}
	var inDir []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			inDir = append(inDir, path.Join(sub, e.Name()))
		}
	}
	sort.Strings(inDir)
	paths = append(paths, inDir...)

	var out []Convention
	for _, p := range paths {
		info, err := fs.Stat(fsys, p)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && info.IsDir()) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("conventions: %w", err)
		}
		if info.Size() > MaxConventionBytes {
			return nil, fmt.Errorf("conventions: %s is %d bytes, more than the %d a conventions file may have", p, info.Size(), MaxConventionBytes)
		}
		b, err := readAtMost(fsys, p, MaxConventionBytes)
		if err != nil {
			return nil, fmt.Errorf("conventions: %w", err)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("conventions: %s is not UTF-8 text", p)
		}
		out = append(out, Convention{Dir: dir, Path: p, Text: string(b)})
	}
	return out, nil
}

// readAtMost reads a file that must not be longer than limit: one that
// grew since its Stat is refused rather than read whole.
func readAtMost(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is more than the %d bytes a conventions file may have", name, limit)
	}
	return b, nil
}
