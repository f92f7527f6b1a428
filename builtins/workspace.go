package builtins

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/symbi-dev/symbi/plan"
)

// Sentinel causes of the file builtins' refusals (see ErrOutsideWorkspace
// for a path that leaves the workspace). Test with errors.Is.
var (
	// ErrProtectedPath refuses the state directory, the configuration's own
	// files and the other Options.Protected paths, whatever the policies say.
	ErrProtectedPath = errors.New("protected path")
	// ErrNotCanonical refuses a path argument that reached an executor in
	// another form than Canonical gives it: the gate decides on the canonical
	// form, so that is the only form a file builtin runs with.
	ErrNotCanonical = errors.New("path is not in canonical form")
	// ErrPathChanged refuses a path whose directories or file changed between
	// the gate's decision and the executor's open: a symbolic link appeared
	// where the gate saw a directory or a file.
	ErrPathChanged = errors.New("path changed after the gate decided on it")
)

// Protected is a path that no builtin file tool may read, list or write,
// whatever the policies say: a file of the configuration, a saved plan, a
// knowledge store. The state directory is always protected.
type Protected struct {
	Path string // absolute, or relative to the working directory
	What string // what it is, for the refusal: "a file of the configuration"
}

// maxSymlinks bounds the symbolic links one path may pass through, as
// Linux's MAXSYMLINKS does.
const maxSymlinks = 40

// workspace is the directory the file builtins are confined to, and the
// paths inside it they may never touch. Every path argument is put in one
// canonical form (canonical) before the gate; the executors accept only that
// form and open it without following any symbolic link, so the file a tool
// touches is the one the gate decided on.
type workspace struct {
	dir       string // absolute, as configured
	real      string // dir with its symbolic links resolved
	err       error  // why there is no usable workspace; returned by every use
	protected []protectedPath
}

// protectedPath is one protected path, by name and by identity: a name
// catches it before it exists, an identity catches another name for it (a
// hard link, a case-insensitive file system).
type protectedPath struct {
	rel  string // canonical; "." when the workspace itself is inside it; "" when outside the workspace
	abs  string // symbolic links resolved
	what string
}

func newWorkspace(dir string, protected []Protected) *workspace {
	if dir == "" {
		return &workspace{err: ErrNoWorkspace}
	}
	w := &workspace{}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &workspace{err: fmt.Errorf("workspace: %w", err)}
	}
	w.dir = abs
	if w.real, err = filepath.EvalSymlinks(abs); err != nil {
		w.err = fmt.Errorf("workspace: %w", fileError(err, "."))
		return w
	}
	for _, p := range protected {
		if p.Path == "" {
			continue
		}
		pabs, err := filepath.Abs(p.Path)
		if err != nil {
			continue
		}
		pp := protectedPath{abs: realPath(pabs), what: p.What}
		if rel, err := filepath.Rel(w.real, pp.abs); err == nil && filepath.IsLocal(rel) {
			pp.rel = filepath.ToSlash(rel)
		} else if rel, err := filepath.Rel(pp.abs, w.real); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			pp.rel = "."
		}
		w.protected = append(w.protected, pp)
	}
	return w
}

// realPath resolves the symbolic links of the longest part of an absolute
// path that exists; the rest is kept as written (it is clean).
func realPath(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// canonical returns the one form of a path argument that the gate decides
// on and the executor runs with: relative to the workspace, slash-separated,
// cleaned (".." is resolved as text, before any link), every symbolic link
// inside the workspace resolved, "." for the workspace itself. A path that
// leaves the workspace, as written or through a link, wraps
// ErrOutsideWorkspace; one that is or lies inside a protected path wraps
// ErrProtectedPath. Errors name p as given, never the workspace's absolute
// path.
func (w *workspace) canonical(p string) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%q: a path may not contain a NUL byte", p)
	}
	rel := filepath.FromSlash(p)
	if rel == "" {
		rel = "."
	}
	if filepath.IsAbs(rel) {
		r, ok := w.within(rel)
		if !ok {
			return "", fmt.Errorf("%q: %w", p, ErrOutsideWorkspace)
		}
		rel = r
	}
	rel = filepath.Clean(rel)
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%q: %w", p, ErrOutsideWorkspace)
	}
	resolved, infos, err := w.resolve(rel)
	if err != nil {
		return "", fmt.Errorf("%q: %w", p, err)
	}
	var ids []fs.FileInfo
	if len(infos) > 0 {
		ids = w.identities()
	}
	if what, ok := w.protectedAt(resolved, infos, ids); ok {
		return "", protectedError(p, resolved, what)
	}
	return resolved, nil
}

// within makes an absolute path relative to the workspace, as configured or
// as resolved; false when it is under neither.
func (w *workspace) within(abs string) (string, bool) {
	for _, root := range []string{w.dir, w.real} {
		if rel, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(rel) {
			return rel, true
		}
	}
	return "", false
}

// resolve follows the symbolic links of a clean, local path inside the
// workspace, component by component, and returns it slash-separated with
// the Lstat of each component that exists (for the identity checks). A
// component that does not exist ends the walk: nothing below it can be a
// link. A link that leads out of the workspace wraps ErrOutsideWorkspace.
func (w *workspace) resolve(rel string) (string, []fs.FileInfo, error) {
	root, err := os.OpenRoot(w.real)
	if err != nil {
		return "", nil, fmt.Errorf("workspace: %w", fileError(err, "."))
	}
	defer root.Close()
	parts := splitPath(filepath.ToSlash(rel))
	for links := 0; ; links++ {
		if links > maxSymlinks {
			return "", nil, fmt.Errorf("more than %d symbolic links", maxSymlinks)
		}
		resolved, infos, rest, err := w.resolveLink(root, parts)
		if err != nil || rest == nil {
			return resolved, infos, err
		}
		parts = rest
	}
}

// resolveLink walks parts up to the first symbolic link, and returns the
// path with that link replaced by its target, cleaned, as rest; rest is nil
// when there was no link, and then the path is resolved.
func (w *workspace) resolveLink(root *os.Root, parts []string) (string, []fs.FileInfo, []string, error) {
	done := "."
	infos := make([]fs.FileInfo, 0, len(parts))
	for i, name := range parts {
		next := path.Join(done, name)
		fi, err := root.Lstat(filepath.FromSlash(next))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Not there (yet): the rest is a name to create, or an error
			// the executor reports.
			return path.Join(append([]string{next}, parts[i+1:]...)...), infos, nil, nil
		}
		if err != nil {
			return "", nil, nil, fileError(err, next)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			infos = append(infos, fi)
			continue
		}
		target, err := root.Readlink(filepath.FromSlash(next))
		if err != nil {
			return "", nil, nil, fileError(err, next)
		}
		if filepath.IsAbs(target) {
			r, ok := w.within(target)
			if !ok {
				return "", nil, nil, fmt.Errorf("%s is a link that leads out: %w", next, ErrOutsideWorkspace)
			}
			target = r
		}
		joined := path.Join(append([]string{path.Dir(next), filepath.ToSlash(target)}, parts[i+1:]...)...)
		if !filepath.IsLocal(filepath.FromSlash(joined)) {
			return "", nil, nil, fmt.Errorf("%s is a link that leads out: %w", next, ErrOutsideWorkspace)
		}
		rest := splitPath(joined)
		if rest == nil {
			rest = []string{} // the link points at the workspace itself
		}
		return "", nil, rest, nil
	}
	return done, infos, nil, nil
}

// splitPath splits a clean slash path into its names; "." has none.
func splitPath(p string) []string {
	if p == "." || p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// protectedAt reports whether the canonical path rel is, or lies inside, a
// protected path, and says which ("is a file of the configuration", "is
// inside the state directory"): by name, or because one of its existing
// components (infos, from resolve) is a protected file or directory under
// another name (ids, from identities).
func (w *workspace) protectedAt(rel string, infos, ids []fs.FileInfo) (string, bool) {
	for _, pp := range w.protected {
		switch {
		case pp.rel == "":
		case rel == pp.rel:
			return "is " + pp.what, true
		case pp.rel == ".", strings.HasPrefix(rel, pp.rel+"/"):
			return "is inside " + pp.what, true
		}
	}
	for i, id := range ids {
		if id == nil {
			continue
		}
		for j, fi := range infos {
			if !os.SameFile(fi, id) {
				continue
			}
			if j == len(infos)-1 && len(infos) == len(splitPath(rel)) {
				return "is " + w.protected[i].what, true
			}
			return "is inside " + w.protected[i].what, true
		}
	}
	return "", false
}

// identities stats the protected paths, for protectedAt; nil for one that
// does not exist. They are looked up on each use, not once: a protected
// path may be created (the state directory on a first run) after the
// toolbox.
func (w *workspace) identities() []fs.FileInfo {
	ids := make([]fs.FileInfo, len(w.protected))
	for i, pp := range w.protected {
		ids[i], _ = os.Stat(pp.abs)
	}
	return ids
}

func protectedError(p, resolved, which string) error {
	shown := fmt.Sprintf("%q", p)
	if p != resolved {
		shown += fmt.Sprintf(" (%s)", resolved)
	}
	return fmt.Errorf("%w: %s %s; builtin file tools never read, list or write it, whatever the policies allow", ErrProtectedPath, shown, which)
}

// exact is the executor's check: p must be the canonical form the gate
// decided on (empty stands for the workspace, "."), and must still be. A
// path that resolves differently now, because a link appeared since the
// gate, is refused rather than followed.
func (w *workspace) exact(p string) (string, error) {
	if p == "" {
		p = "."
	}
	c, err := w.canonical(p)
	if err != nil {
		return "", err
	}
	if c != p {
		return "", fmt.Errorf("%q resolves to %q: %w; the gate decides on canonical paths, and a file tool runs only with the path it decided on", p, c, ErrNotCanonical)
	}
	return c, nil
}

// openDir opens the directory rel (canonical) for the executor, one
// component at a time, each by a handle on its parent (os.Root), refusing a
// component that is a symbolic link now or that is not the directory its
// Lstat saw: the walk can only end where the gate's canonical path pointed.
// With create, missing directories are made.
func (w *workspace) openDir(rel string, create bool) (*os.Root, error) {
	dir, err := os.OpenRoot(w.real)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", fileError(err, "."))
	}
	for _, name := range splitPath(rel) {
		sub, err := enterDir(dir, name, create)
		dir.Close()
		if err != nil {
			return nil, err
		}
		dir = sub
	}
	return dir, nil
}

func enterDir(dir *os.Root, name string, create bool) (*os.Root, error) {
	fi, err := dir.Lstat(name)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err := dir.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err = dir.Lstat(name)
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, ErrPathChanged
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	sub, err := dir.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	if got, err := sub.Stat("."); err != nil || !os.SameFile(fi, got) {
		sub.Close()
		return nil, ErrPathChanged
	}
	return sub, nil
}

// openFile opens the regular file rel (canonical) for reading, through
// openDir, refusing a symbolic link or a file swapped since its Lstat.
func (w *workspace) openFile(rel string) (*os.File, error) {
	if rel == "." {
		return nil, errors.New("the path names the workspace, a directory, not a file")
	}
	dir, err := w.openDir(path.Dir(rel), false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	name := path.Base(rel)
	fi, err := dir.Lstat(name)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, ErrPathChanged
	case fi.IsDir():
		return nil, errors.New("is a directory, not a file (list it with list_dir)")
	case !fi.Mode().IsRegular():
		return nil, errors.New("is not a regular file")
	}
	f, err := dir.Open(name)
	if err != nil {
		return nil, err
	}
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		f.Close()
		return nil, ErrPathChanged
	}
	return f, nil
}

// listDir lists the directory rel (canonical), leaving out the protected
// paths in it: a listing of the state directory's parent does not show the
// state directory at all.
func (w *workspace) listDir(rel string) ([]fs.DirEntry, error) {
	dir, err := w.openDir(rel, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	entries, err := fs.ReadDir(dir.FS(), ".")
	if err != nil {
		return nil, err
	}
	ids := w.identities()
	out := entries[:0]
	for _, e := range entries {
		var infos []fs.FileInfo
		if fi, err := e.Info(); err == nil {
			infos = append(infos, fi)
		}
		if _, hidden := w.protectedAt(path.Join(rel, e.Name()), infos, ids); !hidden {
			out = append(out, e)
		}
	}
	return out, nil
}

// writeFile writes (or appends to) the file rel (canonical), creating its
// directories. A new file is created exclusively, so a link put in its place
// is not followed; an existing one is opened without truncation, checked to
// be the file its Lstat saw, and only then truncated.
func (w *workspace) writeFile(rel, content string, appending bool) error {
	if rel == "." {
		return errors.New("the path names the workspace itself, not a file")
	}
	dir, err := w.openDir(path.Dir(rel), true)
	if err != nil {
		return err
	}
	defer dir.Close()
	name := path.Base(rel)
	flag := os.O_WRONLY
	if appending {
		flag |= os.O_APPEND
	}
	var f *os.File
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if f, err = dir.OpenFile(name, flag|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return err
		}
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return ErrPathChanged
	case !fi.Mode().IsRegular():
		return errors.New("is not a regular file")
	default:
		if f, err = dir.OpenFile(name, flag, 0); err != nil {
			return err
		}
		if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
			f.Close()
			return ErrPathChanged
		}
		if !appending {
			if err := f.Truncate(0); err != nil {
				f.Close()
				return err
			}
		}
	}
	if _, err := io.WriteString(f, content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// workspaceFS is the workspace as an fs.FS for the conventions lookup: each
// name is canonicalised (links inside the workspace followed, protected
// paths and ways out refused) and opened as the executors open files.
type workspaceFS struct{ w *workspace }

func (f workspaceFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	rel, err := f.w.canonical(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	dir, err := f.w.openDir(path.Dir(rel), false)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPathError(err)}
	}
	defer dir.Close()
	if rel == "." {
		return dir.Open(".")
	}
	base := path.Base(rel)
	fi, err := dir.Lstat(base)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPathError(err)}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrPathChanged}
	}
	file, err := dir.Open(base)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPathError(err)}
	}
	if got, err := file.Stat(); err != nil || !os.SameFile(fi, got) {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrPathChanged}
	}
	return file, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pathArgs are the arguments of a builtin that name paths in the
// workspace. fill says whether a missing one stands for the workspace (and
// is written out as "." in the canonical form) given the other arguments.
type pathArgs struct {
	names []string
	fill  func(args map[string]json.RawMessage) bool
}

func always(map[string]json.RawMessage) bool { return true }
func never(map[string]json.RawMessage) bool  { return false }

// conventionsScope: recall_knowledge's dir matters, and defaults to the
// workspace, only for a conventions lookup.
func conventionsScope(args map[string]json.RawMessage) bool {
	var scope string
	_ = json.Unmarshal(args["scope"], &scope)
	return scope == "conventions"
}

// Canonical returns the arguments of a call with every path argument of a
// builtin file tool (read_file's, list_dir's and write_file's path,
// recall_knowledge's dir) in canonical form: relative to the workspace,
// slash-separated, cleaned, symbolic links inside the workspace resolved,
// and a missing path that stands for the workspace written out as ".". The
// engine calls it after Validate and before the gate, so every policy
// decides on the canonical form, and the executor runs with exactly that
// form: it refuses any other (ErrNotCanonical).
//
// A path that leaves the workspace is an invalid_arguments failure wrapping
// ErrOutsideWorkspace; one inside the state directory or another protected
// path wraps ErrProtectedPath, whatever the policies would say. Arguments
// of tools without paths, and arguments already canonical, are returned as
// they are (the same bytes).
func (tb *Toolbox) Canonical(name string, args json.RawMessage) (json.RawMessage, error) {
	e, err := tb.lookup(name)
	if err != nil {
		return nil, err
	}
	if len(e.paths.names) == 0 {
		return args, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, fail(InvalidArguments, name, errors.New("arguments must be a JSON object"))
	}
	changed := false
	for _, k := range e.paths.names {
		raw, ok := obj[k]
		if !ok && !e.paths.fill(obj) {
			continue
		}
		p := "."
		if ok {
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, fail(InvalidArguments, name, fmt.Errorf("%s must be a string", k))
			}
		}
		c, err := tb.ws.canonical(p)
		if err != nil {
			return nil, pathFailure(name, err)
		}
		if ok && c == p {
			continue
		}
		if obj[k], err = marshalUnescaped(c); err != nil {
			return nil, fail(Error, name, err)
		}
		changed = true
	}
	if !changed {
		return args, nil
	}
	out, err := marshalUnescaped(obj)
	if err != nil {
		return nil, fail(Error, name, err)
	}
	return out, nil
}

// ProtectedPaths lists the paths of a plan that no builtin file tool may
// touch, besides the state directory: every file the compiler read (the
// configuration's .hcl files, prompts, policies, Cedar entities and
// schemas, scripted models' scripts), the knowledge stores, and the
// programs and scripts that command tools and stdio MCP servers run (every
// fixed argument that names an existing file). baseDir is the configuration
// directory the plan's paths are relative to. A tool that could rewrite any
// of these would change what the agent, its policies or its tools are on
// the next run.
func ProtectedPaths(p *plan.Plan, baseDir string) []Protected {
	var out []Protected
	at := func(name string) string {
		if filepath.IsAbs(name) {
			return name
		}
		return filepath.Join(baseDir, filepath.FromSlash(name))
	}
	for _, f := range p.Files {
		out = append(out, Protected{Path: at(f.Path), What: "a file of the configuration"})
	}
	for _, k := range p.Knowledge {
		out = append(out, Protected{Path: at(k.Path), What: "a knowledge store"})
	}
	for _, name := range Scripts(p, baseDir) {
		out = append(out, Protected{Path: name, What: "a program or script a tool runs"})
	}
	return out
}

// Scripts lists the programs and scripts a plan's tools run: every fixed
// argument of a command tool's, a stdio MCP server's, and a best-of-N
// command scorer's or selector's argv that names an existing regular file,
// resolved against the command's directory (relative to baseDir), as an
// absolute path, in the plan's order, each once. These are the files that
// are protected locally and whose digests a durable run's workers check
// (docs/temporal.md), found the same way for both.
func Scripts(p *plan.Plan, baseDir string) []string {
	var out []string
	seen := map[string]bool{}
	at := func(name string) string {
		if filepath.IsAbs(name) {
			return name
		}
		return filepath.Join(baseDir, filepath.FromSlash(name))
	}
	scripts := func(dir string, argv []plan.String) {
		for _, a := range argv {
			if a.Deferred != nil || a.Value == "" {
				continue
			}
			name := a.Value
			if !filepath.IsAbs(name) {
				name = filepath.Join(at(dir), name)
			}
			if seen[name] {
				continue
			}
			if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	for _, t := range p.Tools {
		if c := t.Executor.Command; c != nil {
			scripts(c.Dir, c.Argv)
		}
	}
	for _, s := range p.MCPServers {
		scripts("", s.Command)
	}
	// A best-of-N block's command scorer and selector are tool calls too.
	for _, b := range p.BestOfN {
		if c := b.Scorer.Command; c != nil {
			scripts(c.Dir, c.Argv)
		}
		if c := b.Selector.Command; c != nil {
			scripts(c.Dir, c.Argv)
		}
	}
	return out
}
