package opa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/util"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

func init() { policy.RegisterOPA(Engine{}) }

// Engine prepares OPA policies in this process (policy.OPAEngine).
type Engine struct{}

// PrepareOPA is NewOPA.
func (Engine) PrepareOPA(ctx context.Context, address string, pol plan.OPAPolicy, baseDir string) (policy.OPAGate, error) {
	o, err := NewOPA(ctx, address, pol, baseDir)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// OPA decides with Rego v1 modules. The query is compiled and prepared once,
// in NewOPA; Decide only builds the input document and evaluates, so one OPA
// serves every goroutine of a run.
type OPA struct {
	address  string
	query    string
	modules  map[string]*ast.Module // by path
	sources  map[string]string      // by path, for the Rego test runner
	data     map[string]any
	store    storage.Store
	prepared rego.PreparedEvalQuery
}

// NewOPA loads, compiles and prepares an OPA policy. Files are read through
// plan.FileRef.Load, so a plan never runs a module that changed after it was
// compiled. Every problem is reported, each with its file and line.
func NewOPA(ctx context.Context, address string, pol plan.OPAPolicy, baseDir string) (*OPA, error) {
	o := &OPA{address: address, query: pol.Query, modules: map[string]*ast.Module{}, sources: map[string]string{}}
	var errs policy.LoadErrors
	if len(pol.Modules) == 0 {
		errs = append(errs, &policy.LoadError{Policy: address, Err: errors.New("opa: no modules")})
	}
	for _, ref := range pol.Modules {
		text, err := ref.Load(baseDir)
		if err != nil {
			errs = append(errs, &policy.LoadError{Policy: address, File: ref.Path, Err: err})
			continue
		}
		m, err := ast.ParseModuleWithOpts(ref.Path, string(text), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, regoErrors(address, ref.Path, err)...)
			continue
		}
		o.modules[ref.Path] = m
		o.sources[ref.Path] = string(text)
	}
	data := map[string]any{}
	if pol.Data != nil {
		var err error
		if data, err = loadData(*pol.Data, baseDir); err != nil {
			errs = append(errs, &policy.LoadError{Policy: address, File: pol.Data.Path, Line: jsonErrorLine(err, *pol.Data, baseDir), Err: err})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	compiler := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if compiler.Compile(o.modules); compiler.Failed() {
		return nil, regoErrors(address, "", compiler.Errors)
	}
	query, err := ast.ParseRef(pol.Query)
	if err != nil || !query.HasPrefix(ast.DefaultRootRef) {
		return nil, policy.LoadErrors{{Policy: address, Err: fmt.Errorf("opa: query %q is not a reference into data, like data.symbi.gate.decision", pol.Query)}}
	}
	if len(compiler.GetRules(query)) == 0 && !dataHas(data, query) {
		return nil, policy.LoadErrors{{Policy: address, Err: fmt.Errorf("opa: %w: %s is defined by no rule in %s and no data", policy.ErrUndefinedQuery, pol.Query, modulePaths(o.modules))}}
	}
	o.data = data
	o.store = inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(false))
	o.prepared, err = rego.New(
		rego.ParsedQuery(ast.NewBody(ast.NewExpr(ast.NewTerm(query)))),
		rego.Compiler(compiler),
		rego.Store(o.store),
		rego.SetRegoVersion(ast.RegoV1),
		// A built-in that fails (to_number("x"), a bad regex) would
		// otherwise leave its rule undefined, and a default such as
		// not_applicable would then let the action through: fail closed.
		rego.StrictBuiltinErrors(true),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, regoErrors(address, "", err)
	}
	return o, nil
}

// Decide evaluates the prepared query. An undefined result, an evaluation
// error and a result of the wrong shape are all denies.
func (o *OPA) Decide(ctx context.Context, in policy.Input) policy.Decision {
	return o.decide(ctx, in, nil)
}

func (o *OPA) decide(ctx context.Context, in policy.Input, tracer topdown.QueryTracer) policy.Decision {
	if err := ctx.Err(); err != nil {
		return o.deny("opa: not decided: %v", err)
	}
	input, err := inputValue(in)
	if err != nil {
		return o.deny("opa: building the input: %v", err)
	}
	opts := []rego.EvalOption{rego.EvalParsedInput(input)}
	if tracer != nil {
		opts = append(opts, rego.EvalQueryTracer(tracer))
	}
	rs, err := o.prepared.Eval(ctx, opts...)
	if err != nil {
		return o.deny("opa: %v", err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return o.deny("opa: %s is undefined for this input (an undefined decision is a deny)", o.query)
	}
	d, err := policy.DecodeDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return o.deny("opa: %s: %v", o.query, err)
	}
	d.Engine = "opa"
	return d
}

// deny is the deny an OPA failure maps to: no decision was reached.
func (o *OPA) deny(format string, args ...any) policy.Decision {
	return policy.Decision{Outcome: policy.Deny, Reason: fmt.Sprintf(format, args...), Engine: "opa", EngineError: true}
}

// Explain decides with a trace of the evaluation, for `policy eval --explain`.
// The input document comes first, on one line of JSON, so the decision can
// be reproduced with the OPA CLI (`opa eval -i`) over the same modules.
func (o *OPA) Explain(ctx context.Context, in policy.Input) (policy.Decision, string) {
	var buf bytes.Buffer
	d := o.explain(ctx, in, &buf)
	return d, buf.String()
}

func (o *OPA) explain(ctx context.Context, in policy.Input, w io.Writer) policy.Decision {
	if doc, err := inputJSON(in); err == nil {
		fmt.Fprintf(w, "input: %s\n\n", doc)
	}
	buf := topdown.NewBufferTracer()
	d := o.decide(ctx, in, buf)
	topdown.PrettyTraceWithLocation(w, *buf)
	return d
}

// inputJSON is the input document OPA evaluates, as compact JSON.
func inputJSON(in policy.Input) ([]byte, error) {
	v, err := inputValue(in)
	if err != nil {
		return nil, err
	}
	x, err := ast.JSON(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// regoErrors turns OPA's errors into LoadErrors with file and line, so the
// message reads "policies/tools.rego:12: rego_parse_error: ...".
func regoErrors(address, file string, err error) policy.LoadErrors {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		var one *ast.Error
		if !errors.As(err, &one) {
			return policy.LoadErrors{{Policy: address, File: file, Err: fmt.Errorf("opa: %w", err)}}
		}
		astErrs = ast.Errors{one}
	}
	out := make(policy.LoadErrors, 0, len(astErrs))
	for _, e := range astErrs {
		le := &policy.LoadError{Policy: address, File: file, Err: fmt.Errorf("%s: %s", e.Code, e.Message)}
		if e.Location != nil {
			if e.Location.File != "" {
				le.File = e.Location.File
			}
			le.Line = e.Location.Row
		}
		out = append(out, le)
	}
	return out
}

func loadData(ref plan.FileRef, baseDir string) (map[string]any, error) {
	b, err := ref.Load(baseDir)
	if err != nil {
		return nil, err
	}
	var v any
	if err := util.UnmarshalJSON(b, &v); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data: want a JSON object at the top, got %s", jsonKind(v))
	}
	return m, nil
}

// jsonErrorLine finds the line of a JSON syntax error, when there is one.
func jsonErrorLine(err error, ref plan.FileRef, baseDir string) int {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return 0
	}
	b, lerr := ref.Load(baseDir)
	if lerr != nil || se.Offset > int64(len(b)) {
		return 0
	}
	return bytes.Count(b[:se.Offset], []byte("\n")) + 1
}

// dataHas reports whether the data document defines the path of ref.
func dataHas(data map[string]any, ref ast.Ref) bool {
	var cur any = data
	for _, t := range ref[1:] {
		key, ok := t.Value.(ast.String)
		if !ok {
			return true // a computed key: leave it to evaluation
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[string(key)]; !ok {
			return false
		}
	}
	return true
}

func modulePaths(m map[string]*ast.Module) string {
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return fmt.Sprint(paths)
}

// decodeJSON decodes exactly one JSON value with numbers kept as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
