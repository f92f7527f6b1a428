package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/symbi-dev/symbi/plan"
)

// OPAEngine prepares OPA policies. Package policy links no Rego engine of its
// own: OPA's packages cost every process that links them their package init
// and the pages they map, whether or not its plan has an opa policy
// (docs/benchmarks.md). An engine registers itself, as a database/sql driver
// does: importing github.com/symbi-dev/symbi/policy/opa links OPA into the
// process; the symbi command registers the client of its OPA helper process
// (policy/opaproc) instead.
type OPAEngine interface {
	// PrepareOPA loads, compiles and prepares the policy at address. Files
	// are read relative to baseDir through plan.FileRef.Load. Errors are
	// LoadErrors naming the file and line.
	PrepareOPA(ctx context.Context, address string, pol plan.OPAPolicy, baseDir string) (OPAGate, error)
}

// OPAGate is a prepared OPA policy: a Gate, and what `symbi policy test`,
// `policy eval --explain` and the Temporal runtime ask of Rego besides
// decisions.
type OPAGate interface {
	Gate
	// Explain decides with a trace of the evaluation. The text starts with
	// the input document on one line of JSON ("input: {...}").
	Explain(ctx context.Context, in Input) (Decision, string)
	// RegoTests runs the test_ rules of the policy's modules with its data.
	RegoTests(ctx context.Context) []TestResult
	// Impure names the built-ins the modules call whose result may differ
	// between two evaluations of the same input, sorted, each once.
	Impure(ctx context.Context) ([]string, error)
}

var opaEngine struct {
	sync.RWMutex
	e OPAEngine
}

// RegisterOPA makes e the engine of every opa policy the process prepares.
// It panics when e is nil or an engine is registered already: two engines
// would decide the same policy in two places.
func RegisterOPA(e OPAEngine) {
	opaEngine.Lock()
	defer opaEngine.Unlock()
	if e == nil {
		panic("policy: RegisterOPA with a nil engine")
	}
	if opaEngine.e != nil {
		panic("policy: RegisterOPA called twice")
	}
	opaEngine.e = e
}

// ErrNoOPAEngine: the process has no OPA engine registered, so an opa policy
// cannot be prepared. A gate never falls back to allowing: the plan does not
// load.
var ErrNoOPAEngine = errors.New("no OPA engine in this process")

// PrepareOPA prepares an OPA policy with the registered engine.
func PrepareOPA(ctx context.Context, address string, pol plan.OPAPolicy, baseDir string) (OPAGate, error) {
	opaEngine.RLock()
	e := opaEngine.e
	opaEngine.RUnlock()
	if e == nil {
		return nil, LoadErrors{{Policy: address, Err: fmt.Errorf("opa: %w: link github.com/symbi-dev/symbi/policy/opa, or register the client of the symbi-opa helper (policy/opaproc)", ErrNoOPAEngine)}}
	}
	return e.PrepareOPA(ctx, address, pol, baseDir)
}

// DecodeDecision turns the value an OPA query produced (as ast.JSON gives
// it) into a Decision. A boolean is allow or deny; an object names its
// decision with a reason and, for modify, the new arguments. Anything else
// is an error, which the caller turns into a deny: a policy whose author
// returned the wrong shape must not let actions through.
func DecodeDecision(v any) (Decision, error) { return decodeDecision(v) }

// CheckInputNumbers reports the numbers of in that have no JSON form (NaN,
// infinities), which no engine may decide on: OPA's input document and the
// helper's wire format are JSON.
func CheckInputNumbers(in Input) error {
	if math.IsNaN(in.Run.Usage.CostUSD) || math.IsInf(in.Run.Usage.CostUSD, 0) {
		return errors.New("input.run.usage: cost_usd is not a finite number")
	}
	if err := checkFinite(in.Run.Budget); err != nil {
		return fmt.Errorf("input.run.budget: %w", err)
	}
	if err := checkFinite(in.Context); err != nil {
		return fmt.Errorf("input.context: %w", err)
	}
	return nil
}

// checkFinite finds NaN and infinities, which have no JSON form.
func checkFinite(v any) error {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("a number is not finite")
		}
	case float32:
		return checkFinite(float64(v))
	case map[string]any:
		for _, e := range v {
			if err := checkFinite(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkFinite(e); err != nil {
				return err
			}
		}
	}
	return nil
}
