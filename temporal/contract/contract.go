// Package contract is what symbi and its Temporal runtime agree on, without
// the Temporal SDK: the workflow's input and output, the check a worker
// makes of the files a plan references, and the JSON lines symbi-temporal
// writes for symbi to render (docs/temporal.md).
//
// cmd/symbi imports this package and never package temporal, whose SDK
// would cost every symbi invocation its start-up time and memory: symbi
// runs cmd/symbi-temporal instead and reads its lines. This package must
// import neither the Temporal SDK nor grpc (deps_test.go).
package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/seal"
)

// Names the client and the worker share.
const (
	// Workflow is the workflow type of one run.
	Workflow = "symbi.run"
	// CandidateWorkflow is the child workflow type of one best-of-N
	// candidate's generation.
	CandidateWorkflow = "symbi.candidate"
	// DelegationWorkflow is the child workflow type of one delegation.
	DelegationWorkflow = "symbi.delegation"
	// ModelActivity and ToolActivity are the activity types.
	ModelActivity = "symbi.model"
	ToolActivity  = "symbi.tool"
	// ServersActivity connects an agent's MCP servers on a worker and
	// lists their tools (and the lock check's findings), for the
	// workflow's toolbox.
	ServersActivity = "symbi.servers"
	// KnowledgeActivity recalls facts from a knowledge store on a worker.
	KnowledgeActivity = "symbi.knowledge"
	// EventsQuery returns the run's events from an index on (Events);
	// PendingQuery its approval requests waiting for a person; PlanQuery
	// the canonical plan (a worker that has not seen the run asks for it);
	// ScriptsQuery the scripts' digests the run was started with
	// (Start.Scripts), which that worker checks its own against.
	EventsQuery  = "symbi.events"
	PendingQuery = "symbi.pending"
	PlanQuery    = "symbi.plan"
	ScriptsQuery = "symbi.scripts"
	// DecideUpdate carries a person's decision on one approval request.
	DecideUpdate = "symbi.decide"
	// DefaultTaskQueue is the task queue of `symbi worker` and
	// `symbi run --temporal` when none is given.
	DefaultTaskQueue = plan.DefaultTaskQueue
	// Binary is the program symbi runs for everything Temporal.
	Binary = "symbi-temporal"
	// DefaultEngineIdle is how long a worker keeps the engine of a plan no
	// activity uses (`symbi worker --engine-idle`), DefaultMaxEngines the
	// most engines it keeps (`--max-engines`).
	DefaultEngineIdle = 10 * time.Minute
	DefaultMaxEngines = 16
)

// Start is the workflow's input: the canonical plan (whose Files hold the
// digest of every file the compiler read) and what to run.
type Start struct {
	// Plan is the plan's canonical JSON, as bytes (base64 on the wire): a
	// RawMessage would be re-encoded on the way, and its digest would not
	// hold.
	Plan       []byte `json:"plan"`
	PlanDigest string `json:"plan_digest"`
	Agent      string `json:"agent"`
	// BestOfN, when set, runs that best_of_n block (its address) instead
	// of Agent: its candidates are child workflows.
	BestOfN string `json:"best_of_n,omitempty"`
	Input   string `json:"input"`
	// PolicyContext is the policy input's "context" member (engine.Options).
	PolicyContext map[string]any `json:"policy_context,omitempty"`
	// Scripts is the digest of every file under the configuration
	// directory that a command's argv names (builtins.Scripts: command
	// tools, stdio MCP servers, best-of-N command scorers and selectors),
	// and of every knowledge store's file (read on the workers), that the
	// plan's Files do not already hold, as the client found them. The plan
	// holds the argv and the store's path, not the files' contents; these
	// are the rest of the contract.
	Scripts []plan.FileRef `json:"scripts,omitempty"`
	// ScriptsDigest is ScriptsDigest(Scripts), set by every client that
	// lists the scripts (also when there are none): a worker then refuses
	// a script it has that the client did not list. Empty only in runs
	// started before clients listed them, whose workers check the plan's
	// Files alone.
	ScriptsDigest string `json:"scripts_digest,omitempty"`
}

// NewStart encodes p canonically and digests it, with the digests of the
// scripts its commands name under baseDir, the configuration directory
// the client compiled it from.
func NewStart(p *plan.Plan, baseDir, agent, input string) (Start, error) {
	b, err := plan.Encode(p)
	if err != nil {
		return Start{}, err
	}
	scripts, err := ScriptFiles(p, baseDir)
	if err != nil {
		return Start{}, err
	}
	return Start{Plan: b, PlanDigest: seal.Digest(b), Agent: agent, Input: input, Scripts: scripts, ScriptsDigest: ScriptsDigest(scripts)}, nil
}

// Decode returns the plan of s after checking its digest and its scripts'.
func (s Start) Decode() (*plan.Plan, error) {
	if d := seal.Digest(s.Plan); d != s.PlanDigest {
		return nil, fmt.Errorf("the plan's digest is %s, not the %s the run was started with", d, s.PlanDigest)
	}
	if s.ScriptsDigest != "" {
		if d := ScriptsDigest(s.Scripts); d != s.ScriptsDigest {
			return nil, fmt.Errorf("the scripts' digest is %s, not the %s the run was started with", d, s.ScriptsDigest)
		}
	}
	return plan.Decode(s.Plan)
}

// Verify checks the worker's files in baseDir against what s says of
// them: every file of the plan's Files, and, when the client listed them
// (ScriptsDigest set), every script: each one listed must have the
// client's digest here, and a script the plan's commands name here that
// the client did not list is refused too (the client had no such file).
// A mismatch is a *FileMismatchError naming every file that differs.
func (s Start) Verify(p *plan.Plan, baseDir string) error {
	return Verify(p, baseDir, s.ScriptsDigest != "", s.Scripts)
}

// Verify is Start.Verify for a plan and its scripts given apart (an
// activity's worker, which asks the run for them); listed says whether
// the client listed the scripts at all.
func Verify(p *plan.Plan, baseDir string, listed bool, scripts []plan.FileRef) error {
	bad := verify(p.Files, baseDir)
	if listed {
		for _, f := range scripts {
			if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
				bad = append(bad, Mismatch{Path: f.Path, Want: f.SHA256, Err: "is not a path inside the configuration directory"})
				continue
			}
			bad = append(bad, verify([]plan.FileRef{f}, baseDir)...)
		}
		mine, err := ScriptFiles(p, baseDir)
		if err != nil {
			bad = append(bad, Mismatch{Path: ".", Err: err.Error()})
		}
		theirs := map[string]bool{}
		for _, f := range scripts {
			theirs[f.Path] = true
		}
		for _, f := range mine {
			if !theirs[f.Path] {
				bad = append(bad, Mismatch{Path: f.Path, Have: f.SHA256, Err: "a command of the plan runs it on this worker, but the run's client had no such file"})
			}
		}
	}
	if len(bad) > 0 {
		abs, _ := filepath.Abs(baseDir)
		return &FileMismatchError{BaseDir: abs, Files: bad}
	}
	return nil
}

// ScriptFiles digests the scripts p's commands name (builtins.Scripts) and
// the knowledge stores' files that lie in the configuration directory
// baseDir and are not among the plan's Files, with slash paths relative to
// baseDir, sorted. A program
// outside it (an interpreter in /usr/bin, a tool on PATH) belongs to the
// machine, not the configuration, and is not listed.
func ScriptFiles(p *plan.Plan, baseDir string) ([]plan.FileRef, error) {
	root, err := filepath.Abs(baseDir)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, f := range p.Files {
		known[f.Path] = true
	}
	var out []plan.FileRef
	names := builtins.Scripts(p, root)
	for _, k := range p.Knowledge {
		// A store is read on the workers from their copy: the same file.
		path := k.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, filepath.FromSlash(path))
		}
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			names = append(names, path)
		}
	}
	for _, name := range names {
		rel, err := filepath.Rel(root, name)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		rel = filepath.ToSlash(rel)
		if known[rel] {
			continue
		}
		known[rel] = true
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s, a script a command of the plan runs: %w", rel, err)
		}
		sum := sha256.Sum256(b)
		out = append(out, plan.FileRef{Path: rel, SHA256: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(out, func(a, b plan.FileRef) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// ScriptsDigest digests a list of scripts (ScriptFiles), none included:
// what a workflow hands its activities, so that a worker builds one engine
// per plan and scripts.
func ScriptsDigest(scripts []plan.FileRef) string {
	var b strings.Builder
	b.WriteString("symbi/scripts/v1\n")
	for _, f := range scripts {
		b.WriteString(f.Path)
		b.WriteByte(0)
		b.WriteString(f.SHA256)
		b.WriteByte('\n')
	}
	return seal.Digest([]byte(b.String()))
}

// Output is how a run ended: engine.Result in a form that crosses the wire.
type Output struct {
	RunID       string        `json:"run"`
	Agent       string        `json:"agent"`
	Mode        string        `json:"mode"`
	Answer      string        `json:"answer,omitempty"`
	Termination Termination   `json:"termination"`
	Usage       budget.Amount `json:"usage"`
	Iterations  int           `json:"iterations"`
	ElapsedMS   int64         `json:"elapsed_ms"`
}

// Termination is engine.Termination with its error as text.
type Termination struct {
	Reason string `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// OutputOf is the Output of a Result.
func OutputOf(r *engine.Result) Output {
	t := Termination{Reason: string(r.Termination.Reason), Limit: r.Termination.Limit, Detail: r.Termination.Detail}
	if r.Termination.Err != nil {
		t.Error = r.Termination.Err.Error()
	}
	return Output{RunID: r.RunID, Agent: r.Agent, Mode: r.Mode, Answer: r.Answer, Termination: t, Usage: r.Usage, Iterations: r.Iterations, ElapsedMS: r.Elapsed.Milliseconds()}
}

// Result is the engine.Result of an Output, as symbi prints it.
func (o Output) Result() *engine.Result {
	t := engine.Termination{Reason: engine.Reason(o.Termination.Reason), Limit: o.Termination.Limit, Detail: o.Termination.Detail}
	if o.Termination.Error != "" {
		t.Err = errors.New(o.Termination.Error)
	}
	return &engine.Result{RunID: o.RunID, Agent: o.Agent, Mode: o.Mode, Answer: o.Answer, Termination: t, Usage: o.Usage, Iterations: o.Iterations, Elapsed: time.Duration(o.ElapsedMS) * time.Millisecond}
}

// FileMismatchError is a worker's refusal of a run whose referenced files
// differ from the worker's own copies.
type FileMismatchError struct {
	BaseDir string
	Files   []Mismatch
}

// Mismatch is one file that differs (or is missing: Have empty).
type Mismatch struct {
	Path string `json:"path"`
	Want string `json:"want"`
	Have string `json:"have,omitempty"`
	Err  string `json:"error,omitempty"`
}

func (e *FileMismatchError) Error() string {
	parts := make([]string, len(e.Files))
	for i, m := range e.Files {
		switch {
		case m.Err != "":
			parts[i] = fmt.Sprintf("%s: %s", m.Path, m.Err)
		default:
			parts[i] = fmt.Sprintf("%s is sha256:%s here, the run's plan has sha256:%s", m.Path, short(m.Have), short(m.Want))
		}
	}
	return fmt.Sprintf("this worker's files in %s differ from the run's (the plan is the contract; deploy the same files to every worker): %s", e.BaseDir, strings.Join(parts, "; "))
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// VerifyFiles checks every file p references (plan.Plan.Files: the
// configuration, prompts, policies, entities, schemas, scripts the
// compiler read) against its digest, relative to baseDir. A file that is
// missing or differs is a *FileMismatchError naming each.
func VerifyFiles(p *plan.Plan, baseDir string) error {
	return Verify(p, baseDir, false, nil)
}

// verify checks files (paths relative to baseDir) against their digests.
func verify(files []plan.FileRef, baseDir string) []Mismatch {
	var bad []Mismatch
	for _, f := range files {
		path := f.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(baseDir, filepath.FromSlash(path))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			bad = append(bad, Mismatch{Path: f.Path, Want: f.SHA256, Err: "cannot be read on this worker: " + err.Error()})
			continue
		}
		sum := sha256.Sum256(b)
		if have := hex.EncodeToString(sum[:]); have != f.SHA256 {
			bad = append(bad, Mismatch{Path: f.Path, Want: f.SHA256, Have: have})
		}
	}
	return bad
}

// Line is one line symbi-temporal writes on standard output for symbi:
// the run's id once it started, its events as they happen, and its end
// (or the error that kept it from ending).
type Line struct {
	Run    string        `json:"run,omitempty"`
	Event  *engine.Event `json:"event,omitempty"`
	Output *Output       `json:"output,omitempty"`
	Error  string        `json:"error,omitempty"`
	// Code is the exit code symbi should use with Error (2 usage or
	// configuration, 4 failure).
	Code int `json:"code,omitempty"`

	// The answers of the other commands: a run of `runs`, an event of
	// `runs show`, a pending request of `approve`, a decision made.
	Summary *journal.RunSummary    `json:"summary,omitempty"`
	Journal *journal.Event         `json:"journal,omitempty"`
	Request *policy.Request        `json:"request,omitempty"`
	Record  *policy.ApprovalRecord `json:"record,omitempty"`
	Binding *policy.Binding        `json:"binding,omitempty"`
}

// Request is what symbi sends symbi-temporal on standard input for `run`.
type Request struct {
	Start     Start  `json:"start"`
	Address   string `json:"address,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	TaskQueue string `json:"task_queue,omitempty"`
	Detach    bool   `json:"detach,omitempty"`
}
