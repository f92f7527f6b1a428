package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteTree writes p as a readable tree for review, one block per entry with
// its source position, in the plan's canonical order. Like the JSON form it is
// deterministic, so two plans can be diffed line by line. File contents are
// shown as path and hash, not as text.
func WriteTree(w io.Writer, p *Plan) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# symbi plan, format %d, source sha256 %s\n", p.FormatVersion, p.SourceHash)
	if err := writeEntry(bw, "settings", "", p.Settings); err != nil {
		return err
	}
	for _, v := range p.Variables {
		if err := writeEntry(bw, "var."+v.Name, v.Range.String(), v); err != nil {
			return err
		}
	}
	lists := []func() error{
		func() error { return each(bw, p.Models, func(m Model) (string, Range) { return m.Address, m.Range }) },
		func() error { return each(bw, p.Routers, func(m Router) (string, Range) { return m.Address, m.Range }) },
		func() error { return each(bw, p.Tools, func(m Tool) (string, Range) { return m.Address, m.Range }) },
		func() error {
			return each(bw, p.MCPServers, func(m MCPServer) (string, Range) { return m.Address, m.Range })
		},
		func() error {
			return each(bw, p.ToolProfiles, func(m ToolProfile) (string, Range) { return m.Address, m.Range })
		},
		func() error {
			return each(bw, p.Policies, func(m Policy) (string, Range) { return m.Address, m.Range })
		},
		func() error {
			return each(bw, p.PolicyTests, func(m PolicyTest) (string, Range) { return m.Address, m.Range })
		},
		func() error { return each(bw, p.Budgets, func(m Budget) (string, Range) { return m.Address, m.Range }) },
		func() error {
			return each(bw, p.Recoveries, func(m Recovery) (string, Range) { return m.Address, m.Range })
		},
		func() error {
			return each(bw, p.Knowledge, func(m Knowledge) (string, Range) { return m.Address, m.Range })
		},
		func() error { return each(bw, p.Agents, func(m Agent) (string, Range) { return m.Address, m.Range }) },
		func() error {
			return each(bw, p.BestOfN, func(m BestOfN) (string, Range) { return m.Address, m.Range })
		},
	}
	for _, f := range lists {
		if err := f(); err != nil {
			return err
		}
	}
	if l := p.Lock; l != nil {
		writeLock(bw, l)
	}
	if len(p.Files) > 0 {
		fmt.Fprintf(bw, "\nfiles {\n")
		for _, f := range p.Files {
			fmt.Fprintf(bw, "  %s sha256:%s\n", f.Path, shortHash(f.SHA256))
		}
		fmt.Fprintf(bw, "}\n")
	}
	return bw.Flush()
}

func each[T any](w *bufio.Writer, list []T, key func(T) (string, Range)) error {
	for _, e := range list {
		addr, r := key(e)
		if err := writeEntry(w, addr, r.String(), e); err != nil {
			return err
		}
	}
	return nil
}

func writeEntry(w *bufio.Writer, title, pos string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	delete(m, "address")
	delete(m, "range")
	if pos != "" {
		fmt.Fprintf(w, "\n%s {  # %s\n", title, pos)
	} else {
		fmt.Fprintf(w, "\n%s {\n", title)
	}
	writeObject(w, m, 1)
	fmt.Fprintf(w, "}\n")
	return nil
}

func writeObject(w *bufio.Writer, m map[string]any, depth int) {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		writeValue(w, k, m[k], depth)
	}
}

func writeValue(w *bufio.Writer, k string, v any, depth int) {
	ind := strings.Repeat("  ", depth)
	switch x := v.(type) {
	case map[string]any:
		if isDeferred(x) {
			fmt.Fprintf(w, "%s%s = %s  # deferred, %s\n", ind, k, x["expr"], x["range"])
			return
		}
		if p, h, ok := fileRef(x); ok {
			fmt.Fprintf(w, "%s%s = %q  # sha256:%s\n", ind, k, p, shortHash(h))
			return
		}
		fmt.Fprintf(w, "%s%s {\n", ind, k)
		writeObject(w, x, depth+1)
		fmt.Fprintf(w, "%s}\n", ind)
	case []any:
		if allScalar(x) {
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = scalar(e)
			}
			fmt.Fprintf(w, "%s%s = [%s]\n", ind, k, strings.Join(parts, ", "))
			return
		}
		for _, e := range x {
			writeValue(w, k, e, depth)
		}
	default:
		fmt.Fprintf(w, "%s%s = %s\n", ind, k, scalar(v))
	}
}

// fileRef recognises a FileRef, which reads best on one line.
func fileRef(m map[string]any) (path, hash string, ok bool) {
	p, ok1 := m["path"].(string)
	h, ok2 := m["sha256"].(string)
	return p, h, ok1 && ok2 && len(m) <= 3
}

func isDeferred(m map[string]any) bool {
	_, e := m["expr"].(string)
	_, r := m["range"].(string)
	return e && r && len(m) == 2
}

func allScalar(list []any) bool {
	for _, e := range list {
		switch e.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		b, _ := json.Marshal(x)
		return string(b)
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	case map[string]any:
		if isDeferred(x) {
			return fmt.Sprintf("%s", x["expr"])
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// writeLock shows what the lock file pins, a digest a tool: a pinned tool
// that changes changes the tree.
func writeLock(w *bufio.Writer, l *Lock) {
	fmt.Fprintf(w, "\nlock {  # %s sha256:%s\n", l.File, shortHash(strings.TrimPrefix(l.Digest, "sha256:")))
	for _, s := range l.Servers {
		fmt.Fprintf(w, "  mcp_server.%s {\n", s.Name)
		if s.Executable != "" {
			fmt.Fprintf(w, "    executable = %q  # sha256:%s\n", s.Executable, shortHash(strings.TrimPrefix(s.SHA256, "sha256:")))
		}
		if s.URL != "" {
			fmt.Fprintf(w, "    url = %q\n", s.URL)
		}
		for _, t := range s.Tools {
			fmt.Fprintf(w, "    tool %q = sha256:%s\n", t.Name, shortHash(strings.TrimPrefix(t.Digest, "sha256:")))
		}
		fmt.Fprintf(w, "  }\n")
	}
	for _, t := range l.CommandTools {
		fmt.Fprintf(w, "  %s = %q  # sha256:%s\n", t.Name, t.Executable, shortHash(strings.TrimPrefix(t.SHA256, "sha256:")))
	}
	fmt.Fprintf(w, "}\n")
}
