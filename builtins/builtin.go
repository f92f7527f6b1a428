package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/stdlib"
)

// KnowledgeStore is what recall_knowledge and store_knowledge need from a
// knowledge store; *knowledge.Store satisfies it.
type KnowledgeStore interface {
	Put(ctx context.Context, f knowledge.Fact) error
	Recall(ctx context.Context, query string, limit int, threshold float64) ([]knowledge.Scored, error)
}

type builtinSpec struct {
	description string
	schema      string
	effect      string
	idempotent  bool
	run         func(tb *Toolbox, t plan.Tool) runFunc // t is the plan's tool block
	paths       pathArgs                               // arguments that name paths in the workspace
}

// builtinSpecs returns the table of builtins. It is built on each call, not
// kept in a package variable, so no code can change it for everyone.
func builtinSpecs() map[string]builtinSpec {
	return map[string]builtinSpec{
		"calculator": {
			description: "Evaluate an arithmetic expression: + - * / % ^, parentheses, unary minus, decimals.",
			schema:      `{"type":"object","properties":{"expression":{"type":"string","description":"for example (2 + 3) * 4.5 ^ 2"}},"required":["expression"],"additionalProperties":false}`,
			effect:      "none",
			idempotent:  true,
			run:         func(*Toolbox, plan.Tool) runFunc { return runCalculator },
		},
		"clock": {
			description: "The current date and time in an IANA time zone (UTC by default).",
			schema:      `{"type":"object","properties":{"timezone":{"type":"string","description":"IANA zone such as Europe/Berlin"}},"additionalProperties":false}`,
			effect:      "none",
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runClock },
		},
		"read_file": {
			description: "Read a text file inside the workspace.",
			schema:      `{"type":"object","properties":{"path":{"type":"string","description":"relative to the workspace"},"offset":{"type":"integer","minimum":0,"description":"byte offset to start at"}},"required":["path"],"additionalProperties":false}`,
			effect:      "read",
			idempotent:  true,
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runReadFile },
			paths:       pathArgs{names: []string{"path"}, fill: never},
		},
		"list_dir": {
			description: "List a directory inside the workspace; directories end with /.",
			schema:      `{"type":"object","properties":{"path":{"type":"string","description":"relative to the workspace; . by default"}},"additionalProperties":false}`,
			effect:      "read",
			idempotent:  true,
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runListDir },
			paths:       pathArgs{names: []string{"path"}, fill: always},
		},
		"write_file": {
			description: "Write (or append to) a text file inside the workspace, creating directories as needed.",
			schema:      `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"append":{"type":"boolean"}},"required":["path","content"],"additionalProperties":false}`,
			effect:      "write",
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runWriteFile },
			paths:       pathArgs{names: []string{"path"}, fill: never},
		},
		"http_get": {
			description: "Fetch a URL with GET; only allow-listed hosts.",
			schema:      `{"type":"object","properties":{"url":{"type":"string","description":"http or https URL"}},"required":["url"],"additionalProperties":false}`,
			effect:      "read",
			idempotent:  true,
			run:         func(tb *Toolbox, t plan.Tool) runFunc { return tb.httpGetRun(t.AllowHosts) },
		},
		"delegate": {
			description: "Hand a task to another agent and return its answer.",
			schema:      `{"type":"object","properties":{"target":{"type":"string","description":"the agent's name"},"task":{"type":"string"}},"required":["target","task"],"additionalProperties":false}`,
			effect:      "none",
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runDelegate },
		},
		"recall_knowledge": {
			description: "Search the knowledge store for facts relevant to a query, or read the conventions that apply in a directory (scope conventions).",
			schema:      `{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":50},"scope":{"enum":["facts","conventions"],"description":"facts (default) or the conventions that apply in dir"},"dir":{"type":"string","description":"conventions: a directory inside the workspace"}},"required":["query"],"additionalProperties":false}`,
			effect:      "read",
			idempotent:  true,
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runRecall },
			paths:       pathArgs{names: []string{"dir"}, fill: conventionsScope},
		},
		"store_knowledge": {
			description: "Store a fact as a subject-predicate-object triple with a confidence.",
			schema:      `{"type":"object","properties":{"subject":{"type":"string","minLength":1},"predicate":{"type":"string","minLength":1},"object":{"type":"string","minLength":1},"confidence":{"type":"number","minimum":0,"maximum":1}},"required":["subject","predicate","object"],"additionalProperties":false}`,
			effect:      "write",
			run:         func(tb *Toolbox, _ plan.Tool) runFunc { return tb.runStore },
		},
	}
}

// BuiltinNames lists the builtin tools, sorted.
func BuiltinNames() []string {
	specs := builtinSpecs()
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// BuiltinInfo describes a builtin tool (its schema, effect and description),
// for the compiler to fill into the plan. Name is the builtin's name; Source
// is "builtin".
func BuiltinInfo(name string) (Info, bool) {
	b, ok := builtinSpecs()[name]
	if !ok {
		return Info{}, false
	}
	return Info{
		Name:        name,
		Description: b.description,
		Parameters:  json.RawMessage(b.schema),
		Effect:      b.effect,
		Idempotent:  b.idempotent,
		Source:      "builtin",
	}, true
}

func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return nil
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fail(InvalidArguments, "", err)
	}
	return nil
}

func runCalculator(_ context.Context, args json.RawMessage, _ int) (string, cut, error) {
	var a struct{ Expression string }
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	v, err := evalArithmetic(a.Expression)
	if err != nil {
		return "", cut{}, fail(InvalidArguments, "", err)
	}
	return formatNumber(v), cut{}, nil
}

func (tb *Toolbox) runClock(_ context.Context, args json.RawMessage, _ int) (string, cut, error) {
	var a struct{ Timezone string }
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	if a.Timezone == "" {
		a.Timezone = "UTC"
	}
	loc, err := time.LoadLocation(a.Timezone)
	if err != nil {
		return "", cut{}, fail(InvalidArguments, "", fmt.Errorf("unknown time zone %q", a.Timezone))
	}
	t := tb.opts.Now().In(loc)
	return fmt.Sprintf("%s (%s, %s)", t.Format(time.RFC3339), t.Weekday(), a.Timezone), cut{}, nil
}

func (tb *Toolbox) runReadFile(_ context.Context, args json.RawMessage, limit int) (string, cut, error) {
	var a struct {
		Path   string
		Offset int64
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	rel, err := tb.ws.exact(a.Path)
	if err != nil {
		return "", cut{}, pathFailure("", err)
	}
	f, err := tb.ws.openFile(rel)
	if err != nil {
		return "", cut{}, fail(Error, "", fileError(err, a.Path))
	}
	defer f.Close()
	if a.Offset > 0 {
		if _, err := f.Seek(a.Offset, io.SeekStart); err != nil {
			return "", cut{}, fail(Error, "", err)
		}
	}
	var whole int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		whole = max(st.Size()-a.Offset, 0)
	}
	return readCapped(f, limit, whole)
}

// pathFailure classifies a path the workspace refused: one the model can
// correct is invalid_arguments, anything else (no workspace) an error.
func pathFailure(tool string, err error) error {
	if errors.Is(err, ErrOutsideWorkspace) || errors.Is(err, ErrProtectedPath) || errors.Is(err, ErrNotCanonical) {
		return fail(InvalidArguments, tool, err)
	}
	return fail(Error, tool, err)
}

// fileError names the path as the model gave it (or its canonical form)
// and drops the absolute workspace path, which the model has no use for.
func fileError(err error, p string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %s: %w", pe.Op, p, pe.Err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

func (tb *Toolbox) runListDir(_ context.Context, args json.RawMessage, limit int) (string, cut, error) {
	var a struct{ Path string }
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	rel, err := tb.ws.exact(a.Path)
	if err != nil {
		return "", cut{}, pathFailure("", err)
	}
	entries, err := tb.ws.listDir(rel)
	if err != nil {
		return "", cut{}, fail(Error, "", fileError(err, rel))
	}
	var b strings.Builder
	var size int64
	c := cut{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		size += int64(len(name)) + 1
		if c.truncated || b.Len()+len(name)+1 > limit {
			c.truncated = true
			continue
		}
		b.WriteString(name)
		b.WriteByte('\n')
	}
	if c.truncated {
		c.size = size
	}
	return b.String(), c, nil
}

func (tb *Toolbox) runWriteFile(_ context.Context, args json.RawMessage, _ int) (string, cut, error) {
	var a struct {
		Path    string
		Content string
		Append  bool
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	rel, err := tb.ws.exact(a.Path)
	if err != nil {
		return "", cut{}, pathFailure("", err)
	}
	if rel == "." {
		return "", cut{}, fail(InvalidArguments, "", errors.New("path names the workspace itself, not a file"))
	}
	if err := tb.ws.writeFile(rel, a.Content, a.Append); err != nil {
		return "", cut{}, fail(Error, "", fileError(err, rel))
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(a.Content), rel), cut{}, nil
}

// hostAllowed matches a URL's host against the allow-list, with and without
// its port. Host names are compared without regard to case, as DNS does.
func hostAllowed(allow []string, u *url.URL) bool {
	host, hostport := strings.ToLower(u.Hostname()), strings.ToLower(u.Host)
	for _, p := range allow {
		p = strings.ToLower(p)
		if ok, _ := stdlib.MatchGlob(p, host); ok {
			return true
		}
		if ok, _ := stdlib.MatchGlob(p, hostport); ok {
			return true
		}
	}
	return false
}

// httpGetRun fetches only the hosts of the tool's own allow_hosts, or of
// Options.HTTPAllowHosts when the tool has none.
func (tb *Toolbox) httpGetRun(allow []string) runFunc {
	if len(allow) == 0 {
		allow = tb.opts.HTTPAllowHosts
	}
	allow = slices.Clone(allow)
	return func(ctx context.Context, args json.RawMessage, limit int) (string, cut, error) {
		return tb.runHTTPGet(ctx, allow, args, limit)
	}
}

func (tb *Toolbox) runHTTPGet(ctx context.Context, allow []string, args json.RawMessage, limit int) (string, cut, error) {
	var a struct{ URL string }
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", cut{}, fail(InvalidArguments, "", fmt.Errorf("%q is not an http(s) URL", a.URL))
	}
	if !hostAllowed(allow, u) {
		return "", cut{}, fail(Error, "", fmt.Errorf("%s: %w", u.Host, ErrHostNotAllowed))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", cut{}, fail(InvalidArguments, "", err)
	}
	// A redirect must not lead past the allow-list.
	client := *tb.opts.HTTPClient
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		if !hostAllowed(allow, r.URL) {
			return fail(Error, "", fmt.Errorf("redirect to %s: %w", r.URL.Host, ErrHostNotAllowed))
		}
		return nil
	}
	return doHTTP(ctx, &client, req, limit)
}

func (tb *Toolbox) runDelegate(ctx context.Context, args json.RawMessage, _ int) (string, cut, error) {
	var a struct{ Target, Task string }
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	if tb.opts.Delegate == nil {
		return "", cut{}, fail(Error, "", fmt.Errorf("delegation: %w", ErrNotConfigured))
	}
	out, err := tb.opts.Delegate(ctx, a.Target, a.Task)
	if err != nil {
		return "", cut{}, err
	}
	return out, cut{}, nil
}

func (tb *Toolbox) runRecall(ctx context.Context, args json.RawMessage, limit int) (string, cut, error) {
	var a struct {
		Query string
		Limit int
		Scope string
		Dir   string
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	if a.Scope == "conventions" {
		return tb.runConventions(a.Dir, limit)
	}
	if tb.opts.Knowledge == nil {
		return "", cut{}, fail(Error, "", fmt.Errorf("knowledge store: %w", ErrNotConfigured))
	}
	if a.Limit == 0 {
		a.Limit = 5
	}
	facts, err := tb.opts.Knowledge.Recall(ctx, a.Query, a.Limit, tb.opts.RelevanceThreshold)
	if err != nil {
		return "", cut{}, err
	}
	if len(facts) == 0 {
		return "no relevant facts", cut{}, nil
	}
	var b strings.Builder
	var size int64
	c := cut{}
	for _, f := range facts {
		line := fmt.Sprintf("%s (confidence %.2f, relevance %.2f)\n", f.Text(), f.Confidence, f.Score)
		size += int64(len(line))
		if c.truncated || b.Len()+len(line) > limit {
			c.truncated = true
			continue
		}
		b.WriteString(line)
	}
	if c.truncated {
		c.size = size
	}
	return b.String(), c, nil
}

// runConventions reads the conventions files that apply in dir, walking up
// to the workspace root and no further, through the workspace's checks:
// links inside it are followed, protected paths and ways out refused.
func (tb *Toolbox) runConventions(dir string, limit int) (string, cut, error) {
	if tb.opts.Conventions == "" {
		return "", cut{}, fail(Error, "", fmt.Errorf("conventions: %w", ErrNotConfigured))
	}
	rel, err := tb.ws.exact(dir)
	if err != nil {
		return "", cut{}, pathFailure("", err)
	}
	convs, err := knowledge.Conventions(workspaceFS{tb.ws}, rel, tb.opts.Conventions)
	if err != nil {
		return "", cut{}, fail(Error, "", err)
	}
	if len(convs) == 0 {
		return "no conventions apply", cut{}, nil
	}
	var b strings.Builder
	for _, c := range convs {
		fmt.Fprintf(&b, "## conventions for %s\n%s\n", c.Dir, strings.TrimSpace(c.Text))
	}
	s := b.String()
	if len(s) > limit {
		return cutUTF8(s[:limit]), cutAt(int64(len(s))), nil
	}
	return s, cut{}, nil
}

func (tb *Toolbox) runStore(ctx context.Context, args json.RawMessage, _ int) (string, cut, error) {
	var a struct {
		Subject, Predicate, Object string
		Confidence                 *float64
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", cut{}, err
	}
	if tb.opts.Knowledge == nil {
		return "", cut{}, fail(Error, "", fmt.Errorf("knowledge store: %w", ErrNotConfigured))
	}
	f := knowledge.Fact{Subject: a.Subject, Predicate: a.Predicate, Object: a.Object, Confidence: 1, Source: tb.opts.Agent}
	if a.Confidence != nil {
		f.Confidence = *a.Confidence
	}
	if err := tb.opts.Knowledge.Put(ctx, f); err != nil {
		if errors.Is(err, knowledge.ErrInvalidFact) {
			return "", cut{}, fail(InvalidArguments, "", err)
		}
		return "", cut{}, err
	}
	return "stored: " + f.Text(), cut{}, nil
}

// readCapped reads at most limit bytes; the cut says there was more, and
// how much when whole (the size of what r reads: a file's remaining bytes,
// an http body's Content-Length) is more than limit.
func readCapped(r io.Reader, limit int, whole int64) (string, cut, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return "", cut{}, fail(Error, "", err)
	}
	if len(b) > limit {
		if whole <= int64(limit) {
			whole = 0 // not known after all: the file grew, or the header was wrong
		}
		return cutUTF8(string(b[:limit])), cutAt(whole), nil
	}
	return string(b), cut{}, nil
}
