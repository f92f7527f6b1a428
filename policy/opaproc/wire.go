package opaproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// Binary is the helper's executable name.
const Binary = "symbi-opa"

// protocol names this wire format; change it with the format.
const protocol = "symbi-opa/1"

// Version is what both sides of the hello compare: the protocol, and the
// build of symbi's module the binary was made from (its version, VCS
// revision and whether the tree was modified). `go build -o bin/ ./cmd/...`
// gives symbi and symbi-opa the same.
func Version() string {
	v := protocol
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v += " " + bi.Main.Path + "@" + bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision", "vcs.time", "vcs.modified":
			v += " " + s.Key + "=" + s.Value
		}
	}
	return v
}

// Request operations.
const (
	opHello   = "hello"
	opLoad    = "load"
	opDecide  = "decide"
	opExplain = "explain"
	opTests   = "tests"
	opImpure  = "impure"
	opRelease = "release" // the client dropped the policy: the helper forgets it
	opCount   = "count"   // how many policies the helper holds, in Handle (tests)
)

// request is one line symbi writes to the helper.
type request struct {
	ID      uint64          `json:"id"`
	Op      string          `json:"op"`
	Version string          `json:"version,omitempty"`  // hello
	Address string          `json:"address,omitempty"`  // load
	Policy  *plan.OPAPolicy `json:"policy,omitempty"`   // load
	BaseDir string          `json:"base_dir,omitempty"` // load
	Handle  uint64          `json:"handle,omitempty"`   // the loaded policy asked
	Input   *wireInput      `json:"input,omitempty"`    // decide, explain
}

// response is one line the helper writes back, with its request's ID.
type response struct {
	ID         uint64              `json:"id"`
	Version    string              `json:"version,omitempty"`
	Handle     uint64              `json:"handle,omitempty"`
	Error      string              `json:"error,omitempty"` // the request failed as a whole
	LoadErrors []wireLoadError     `json:"load_errors,omitempty"`
	Decision   *policy.Decision    `json:"decision,omitempty"`
	Text       string              `json:"text,omitempty"`
	Tests      []policy.TestResult `json:"tests,omitempty"`
	Impure     []string            `json:"impure,omitempty"`
}

// wireLoadError is a policy.LoadError; its error travels as its message,
// and as whether it is policy.ErrUndefinedQuery.
type wireLoadError struct {
	Policy         string `json:"policy"`
	File           string `json:"file,omitempty"`
	Line           int    `json:"line,omitempty"`
	Message        string `json:"message"`
	UndefinedQuery bool   `json:"undefined_query,omitempty"`
}

func toWire(es policy.LoadErrors) []wireLoadError {
	out := make([]wireLoadError, len(es))
	for i, e := range es {
		out[i] = wireLoadError{Policy: e.Policy, File: e.File, Line: e.Line, Message: e.Err.Error(), UndefinedQuery: errors.Is(e.Err, policy.ErrUndefinedQuery)}
	}
	return out
}

func fromWire(ws []wireLoadError) policy.LoadErrors {
	out := make(policy.LoadErrors, len(ws))
	for i, w := range ws {
		var is error
		if w.UndefinedQuery {
			is = policy.ErrUndefinedQuery
		}
		out[i] = &policy.LoadError{Policy: w.Policy, File: w.File, Line: w.Line, Err: &remoteError{w.Message, is}}
	}
	return out
}

// remoteError is an error the helper reported: its message as written
// there, and the sentinel it wrapped, for errors.Is.
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }

// wireInput is a policy.Input as it crosses the pipe. The arguments go as
// their bytes (base64), whatever they hold; the maps go with every number
// written as OPA's ast.InterfaceToValue writes the Go value it was (an
// int64 as its digits, a float64 in the shortest 'g' form), so the helper,
// reading them as json.Number, builds the same input document, digit for
// digit, that policy/opa builds in-process.
type wireInput struct {
	Action    policy.Action    `json:"action"`
	Arguments []byte           `json:"arguments_bytes,omitempty"`
	Agent     policy.AgentInfo `json:"agent"`
	Run       wireRun          `json:"run"`
	Context   map[string]any   `json:"context"`
}

type wireRun struct {
	ID        string         `json:"id"`
	Iteration int            `json:"iteration"`
	Usage     policy.Usage   `json:"usage"`
	Budget    map[string]any `json:"budget"`
}

// encodeInput is in as it goes to the helper. It refuses what JSON cannot
// carry exactly: numbers that are not finite, strings that are not UTF-8.
func encodeInput(in policy.Input) (*wireInput, error) {
	if err := policy.CheckInputNumbers(in); err != nil {
		return nil, err
	}
	w := &wireInput{Action: in.Action, Arguments: in.Action.Arguments, Agent: in.Agent,
		Run: wireRun{ID: in.Run.ID, Iteration: in.Run.Iteration, Usage: in.Run.Usage}}
	w.Action.Arguments = nil
	a := in.Action
	for _, s := range append([]string{string(a.Type), a.Tool, a.CallID, a.Effect, a.Target, a.Task, a.Content, a.Reason, in.Agent.Name, in.Agent.Model, in.Run.ID}, a.Tags...) {
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("input: a string is not valid UTF-8: %q", s)
		}
	}
	var err error
	if w.Run.Budget, err = opaMap(in.Run.Budget); err != nil {
		return nil, fmt.Errorf("input.run.budget: %w", err)
	}
	if w.Context, err = opaMap(in.Context); err != nil {
		return nil, fmt.Errorf("input.context: %w", err)
	}
	return w, nil
}

// decodeInput is the policy.Input the helper decides on.
func decodeInput(w *wireInput) policy.Input {
	in := policy.Input{Action: w.Action, Agent: w.Agent, Context: w.Context,
		Run: policy.RunInfo{ID: w.Run.ID, Iteration: w.Run.Iteration, Usage: w.Run.Usage, Budget: w.Run.Budget}}
	if len(w.Arguments) > 0 {
		in.Action.Arguments = json.RawMessage(w.Arguments)
	}
	return in
}

func opaMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := opaValue(m)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// opaValue mirrors ast.InterfaceToValue's cases: the Go types it converts
// itself keep their form (numbers written as it writes them), and any other
// value goes through encoding/json, as its default case does
// (util.RoundTrip).
func opaValue(x any) (any, error) {
	switch x := x.(type) {
	case nil, bool, json.Number:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, fmt.Errorf("a string is not valid UTF-8: %q", x)
		}
		return x, nil
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		// OPA interns a uint64 as int(x): above MaxInt64 it wraps, and the
		// input document must be the one OPA builds in-process.
		return json.Number(strconv.Itoa(int(x))), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("a number is not finite")
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := opaValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			v, err := opaValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !utf8.ValidString(k) {
				return nil, fmt.Errorf("a key is not valid UTF-8: %q", k)
			}
			v, err := opaValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			v, err := opaValue(e)
			if err != nil {
				return nil, err
			}
			if !utf8.ValidString(k) {
				return nil, fmt.Errorf("a key is not valid UTF-8: %q", k)
			}
			out[k] = v
		}
		return out, nil
	}
	// What ast.InterfaceToValue hands to util.RoundTrip: its numbers are
	// written directly, in RoundTrip's forms, the rest through JSON.
	switch x := x.(type) {
	case int8, int16, int32:
		return json.Number(fmt.Sprint(x)), nil
	case uint, uint8, uint16, uint32:
		return json.Number(fmt.Sprint(x)), nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("a number is not finite")
		}
		return json.Number(strconv.FormatFloat(float64(x), 'f', -1, 32)), nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeLine reads one message with the numbers of its maps as
// json.Number, the form opaValue wrote them in.
func decodeLine(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	return dec.Decode(v)
}
