package knowledge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Convention is one conventions file: the rules a team wrote down for the
// files under Dir.
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

// Conventions collects the conventions that apply in dir: walking from dir up
// to and including stopAt, it reads in each directory
//
//	<dir>/<name>.md       first, then
//	<dir>/<name>/*.md     in name order,
//
// nearer directories first, so a convention closer to the work comes before
// (and may refine) a broader one. stopAt must be dir or one of its ancestors;
// empty means the filesystem root. Missing files are not an error; unreadable
// ones, non-UTF-8 ones and ones over MaxConventionBytes are.
func Conventions(dir, stopAt, name string) ([]Convention, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("%w: name %q must be a plain file or directory name", ErrBadConventions, name)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConventions, err)
	}
	if stopAt != "" {
		if stopAt, err = filepath.Abs(stopAt); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadConventions, err)
		}
		if rel, err := filepath.Rel(stopAt, dir); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%w: %s is not inside %s", ErrBadConventions, dir, stopAt)
		}
	}
	var out []Convention
	for d := dir; ; {
		found, err := conventionsIn(d, name)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		parent := filepath.Dir(d)
		if d == stopAt || parent == d {
			return out, nil
		}
		d = parent
	}
}

func conventionsIn(dir, name string) ([]Convention, error) {
	paths := []string{filepath.Join(dir, name+".md")}
	var entries []os.DirEntry
	sub := filepath.Join(dir, name)
	switch info, err := os.Stat(sub); {
	case err == nil && info.IsDir():
		if entries, err = os.ReadDir(sub); err != nil {
			return nil, fmt.Errorf("conventions: %w", err)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("conventions: %w", err)
	}
	var inDir []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			inDir = append(inDir, filepath.Join(sub, e.Name()))
		}
	}
	sort.Strings(inDir)
	paths = append(paths, inDir...)

	var out []Convention
	for _, p := range paths {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && info.IsDir()) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("conventions: %w", err)
		}
		if info.Size() > MaxConventionBytes {
			return nil, fmt.Errorf("conventions: %s is %d bytes, more than the %d a conventions file may have", p, info.Size(), MaxConventionBytes)
		}
		b, err := os.ReadFile(p)
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
