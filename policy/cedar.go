package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
	"github.com/symbi-dev/symbi/plan"
)

// Cedar entity types and actions of a request.
const (
	cedarAgentType  = types.EntityType("Symbi::Agent")
	cedarToolType   = types.EntityType("Symbi::Tool")
	cedarActionType = types.EntityType("Symbi::Action")
)

// cedarActionName maps an action type to its Cedar action id.
func cedarActionName(t ActionType) string {
	if t == ToolCall {
		return "call_tool"
	}
	return string(t)
}

// Cedar decides with a Cedar policy set, parsed (and validated, when a schema
// is given) once in NewCedar. cedar.Authorize is pure, so one Cedar serves
// every goroutine.
//
// The request: principal Symbi::Agent::"<agent>"; action
// Symbi::Action::"call_tool" (or "delegate", "respond", "terminate");
// resource Symbi::Tool::"<tool>" for a tool call, Symbi::Agent::"<target>"
// for a delegation, and the agent itself for respond and terminate; context
// {arguments, effect, iteration, usage}.
//
// A forbid wins (its @reason annotation is the deny reason); a deny with no
// permit is Cedar's default deny and says so; an allow whose permits carry
// @ask asks a person. A forbid that fails to evaluate denies with the error:
// Cedar would skip it, which would fail open.
type Cedar struct {
	address  string
	policies *cedar.PolicySet
	info     map[cedar.PolicyID]cedarPolicyInfo
	entities types.EntityMap
}

type cedarPolicyInfo struct {
	position string // "policies/tools.cedar:12"
	effect   types.Effect
	reason   string // @reason
	ask      string // @ask, when present (may be empty)
	hasAsk   bool
	text     string
}

// NewCedar parses the policy files, builds the entities (tools and agents of
// the plan merged with the entities file) and validates both against the
// schema when there is one. Every problem is reported.
func NewCedar(address string, pol plan.CedarPolicy, p *plan.Plan, baseDir string) (*Cedar, error) {
	c := &Cedar{address: address, policies: cedar.NewPolicySet(), info: map[cedar.PolicyID]cedarPolicyInfo{}}
	var errs LoadErrors
	if len(pol.Policies) == 0 {
		errs = append(errs, &LoadError{Policy: address, Err: errors.New("cedar: no policy files")})
	}
	type located struct {
		id     cedar.PolicyID
		file   string
		policy *cedar.Policy
	}
	var all []located
	for _, ref := range pol.Policies {
		text, err := ref.Load(baseDir)
		if err != nil {
			errs = append(errs, &LoadError{Policy: address, File: ref.Path, Err: err})
			continue
		}
		list, err := cedar.NewPolicyListFromBytes(ref.Path, text)
		if err != nil {
			errs = append(errs, cedarParseError(address, ref.Path, err))
			continue
		}
		for i, pol := range list {
			id := cedar.PolicyID(fmt.Sprintf("%s#%d", ref.Path, i))
			if v, ok := pol.Annotations()["id"]; ok && v != "" {
				id = cedar.PolicyID(v)
			}
			if c.policies.Get(id) != nil {
				errs = append(errs, &LoadError{Policy: address, File: ref.Path, Line: pol.Position().Line, Err: fmt.Errorf("cedar: duplicate policy id %q", id)})
				continue
			}
			c.policies.Add(id, pol)
			ann := pol.Annotations()
			ask, hasAsk := ann["ask"]
			c.info[id] = cedarPolicyInfo{
				position: fmt.Sprintf("%s:%d", ref.Path, pol.Position().Line),
				effect:   pol.Effect(),
				reason:   string(ann["reason"]),
				ask:      string(ask),
				hasAsk:   hasAsk,
				text:     string(pol.MarshalCedar()),
			}
			all = append(all, located{id, ref.Path, pol})
		}
	}
	entities, entErrs := cedarEntities(address, pol.Entities, p, baseDir)
	errs = append(errs, entErrs...)
	c.entities = entities
	if pol.Schema != nil && len(errs) == 0 {
		v, err := cedarValidator(*pol.Schema, baseDir)
		if err != nil {
			errs = append(errs, schemaError(address, pol.Schema.Path, err))
		} else {
			for _, l := range all {
				if err := v.Policy(string(l.id), (*xast.Policy)(l.policy.AST())); err != nil {
					errs = append(errs, &LoadError{Policy: address, File: l.file, Line: l.policy.Position().Line, Err: fmt.Errorf("cedar: does not validate against %s: %v", pol.Schema.Path, err)})
				}
			}
			for _, uid := range sortedUIDs(entities) {
				if err := v.Entity(entities[uid]); err != nil {
					file := "(generated from the plan)"
					if pol.Entities != nil {
						file = pol.Entities.Path
					}
					errs = append(errs, &LoadError{Policy: address, File: file, Err: fmt.Errorf("cedar: entity %s does not validate against %s: %v", uid, pol.Schema.Path, err)})
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

var cedarPosition = regexp.MustCompile(`<input>:(\d+):(\d+)`)

// cedarParseError rewrites cedar-go's "<input>:3:5" into the file's own
// position, so the error reads like every other compile error.
func cedarParseError(address, file string, err error) *LoadError {
	msg := err.Error()
	le := &LoadError{Policy: address, File: file}
	if m := cedarPosition.FindStringSubmatch(msg); m != nil {
		le.Line, _ = strconv.Atoi(m[1])
		msg = strings.Replace(msg, m[0], "column "+m[2], 1)
	}
	le.Err = fmt.Errorf("cedar: %s", msg)
	return le
}

// schemaError moves the schema parser's "file:line:col: " prefix into the
// LoadError, so the file is named once.
func schemaError(address, file string, err error) *LoadError {
	le := &LoadError{Policy: address, File: file, Err: err}
	msg := err.Error()
	prefix := regexp.MustCompile(`(` + regexp.QuoteMeta(file) + `|<input>):(\d+):(\d+): `)
	if m := prefix.FindStringSubmatchIndex(msg); m != nil {
		le.Line, _ = strconv.Atoi(msg[m[4]:m[5]])
		le.Err = fmt.Errorf("%scolumn %s: %s", msg[:m[0]], msg[m[6]:m[7]], msg[m[1]:])
	}
	return le
}

// cedarValidator parses a schema in the human-readable form or, for a .json
// file, the JSON form.
func cedarValidator(ref plan.FileRef, baseDir string) (*validate.Validator, error) {
	b, err := ref.Load(baseDir)
	if err != nil {
		return nil, err
	}
	var s schema.Schema
	s.SetFilename(ref.Path)
	if path.Ext(ref.Path) == ".json" {
		err = s.UnmarshalJSON(b)
	} else {
		err = s.UnmarshalCedar(b)
	}
	if err != nil {
		return nil, fmt.Errorf("cedar schema: %w", err)
	}
	rs, err := s.Resolve()
	if err != nil {
		return nil, fmt.Errorf("cedar schema: %w", err)
	}
	return validate.New(rs, validate.WithStrict()), nil
}

// cedarEntities generates an entity for every tool (effect, tags, idempotent)
// and agent of the plan and merges the entities file into them: the file may
// add parents and attributes, but the plan's attributes win, because they
// are what the tool really is.
func cedarEntities(address string, file *plan.FileRef, p *plan.Plan, baseDir string) (types.EntityMap, LoadErrors) {
	entities := types.EntityMap{}
	if file != nil {
		b, err := file.Load(baseDir)
		if err == nil {
			err = json.Unmarshal(b, &entities)
		}
		if err != nil {
			return nil, LoadErrors{{Policy: address, File: file.Path, Err: fmt.Errorf("cedar entities: %w", err)}}
		}
	}
	if p == nil {
		return entities, nil
	}
	for _, t := range p.Tools {
		uid := types.NewEntityUID(cedarToolType, types.String(addressName(t.Address)))
		merge(entities, types.Entity{UID: uid, Attributes: toolAttributes(t.Effect, t.Tags, &t.Idempotent)})
	}
	for _, a := range p.Agents {
		uid := types.NewEntityUID(cedarAgentType, types.String(addressName(a.Address)))
		merge(entities, types.Entity{UID: uid})
	}
	return entities, nil
}

func toolAttributes(effect string, tags []string, idempotent *bool) types.Record {
	set := make([]types.Value, len(tags))
	for i, t := range tags {
		set[i] = types.String(t)
	}
	m := types.RecordMap{"effect": types.String(effect), "tags": types.NewSet(set...)}
	if idempotent != nil {
		m["idempotent"] = types.Boolean(*idempotent)
	}
	return types.NewRecord(m)
}

func merge(entities types.EntityMap, gen types.Entity) {
	old, ok := entities[gen.UID]
	if !ok {
		if gen.Attributes.Len() == 0 {
			gen.Attributes = types.NewRecord(nil)
		}
		entities[gen.UID] = gen
		return
	}
	attrs := old.Attributes.Map()
	if attrs == nil {
		attrs = types.RecordMap{}
	}
	for k, v := range gen.Attributes.All() {
		attrs[k] = v
	}
	old.Attributes = types.NewRecord(attrs)
	entities[gen.UID] = old
}

func sortedUIDs(m types.EntityMap) []types.EntityUID {
	uids := make([]types.EntityUID, 0, len(m))
	for uid := range m {
		uids = append(uids, uid)
	}
	slices.SortFunc(uids, func(a, b types.EntityUID) int { return strings.Compare(a.String(), b.String()) })
	return uids
}

// request builds the Cedar request for an input, and the resource entity when
// the plan did not know it (an MCP server's tool, found at run time).
func (c *Cedar) request(in Input) (cedar.Request, *types.Entity, error) {
	agent := types.NewEntityUID(cedarAgentType, types.String(in.Agent.Name))
	req := cedar.Request{
		Principal: agent,
		Action:    types.NewEntityUID(cedarActionType, types.String(cedarActionName(in.Action.Type))),
	}
	_, args, err := in.Action.subject()
	if err != nil {
		return cedar.Request{}, nil, err
	}
	var extra *types.Entity
	switch in.Action.Type {
	case ToolCall:
		req.Resource = types.NewEntityUID(cedarToolType, types.String(in.Action.Tool))
		if _, known := c.entities[req.Resource]; !known {
			extra = &types.Entity{UID: req.Resource, Attributes: toolAttributes(in.Action.Effect, in.Action.Tags, nil)}
		}
	case Delegate:
		req.Resource = types.NewEntityUID(cedarAgentType, types.String(in.Action.Target))
	default:
		req.Resource = agent
	}
	argv, err := cedarValue(args)
	if err != nil {
		return cedar.Request{}, nil, fmt.Errorf("arguments: %w", err)
	}
	u := in.Run.Usage
	if math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return cedar.Request{}, nil, errors.New("usage: cost_usd is not a finite number")
	}
	cost, err := types.NewDecimalFromFloat(u.CostUSD)
	if err != nil {
		return cedar.Request{}, nil, fmt.Errorf("usage: %w", err)
	}
	req.Context = types.NewRecord(types.RecordMap{
		"arguments": argv,
		"effect":    types.String(in.Action.Effect),
		"iteration": types.Long(in.Run.Iteration),
		"usage": types.NewRecord(types.RecordMap{
			"model_calls":       types.Long(u.ModelCalls),
			"tool_calls":        types.Long(u.ToolCalls),
			"prompt_tokens":     types.Long(u.PromptTokens),
			"completion_tokens": types.Long(u.CompletionTokens),
			"total_tokens":      types.Long(u.TotalTokens),
			"cost_usd":          cost,
		}),
	})
	return req, extra, nil
}

// cedarValue converts decoded JSON to a Cedar value: integers to Long, other
// numbers to decimal (four places, as Cedar has), arrays to sets, objects to
// records. A null member is left out: Cedar has no null.
func cedarValue(v any) (types.Value, error) {
	switch v := v.(type) {
	case string:
		return types.String(v), nil
	case bool:
		return types.Boolean(v), nil
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return types.Long(i), nil
		}
		if d, err := types.ParseDecimal(string(v)); err == nil {
			return d, nil
		}
		f, err := v.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s has no Cedar form", v)
		}
		return types.NewDecimalFromFloat(f)
	case []any:
		set := make([]types.Value, 0, len(v))
		for _, e := range v {
			if e == nil {
				continue
			}
			cv, err := cedarValue(e)
			if err != nil {
				return nil, err
			}
			set = append(set, cv)
		}
		return types.NewSet(set...), nil
	case map[string]any:
		m := make(types.RecordMap, len(v))
		for k, e := range v {
			if e == nil {
				continue
			}
			cv, err := cedarValue(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			m[types.String(k)] = cv
		}
		return types.NewRecord(m), nil
	}
	return nil, fmt.Errorf("%s has no Cedar form", jsonKind(v))
}

// requestEntities layers the one entity a request adds over the shared,
// read-only map, so concurrent requests never write to it.
type requestEntities struct {
	base  types.EntityMap
	extra *types.Entity
}

func (r requestEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	if r.extra != nil && r.extra.UID == uid {
		return *r.extra, true
	}
	return r.base.Get(uid)
}

// Decide authorizes the request built from in.
func (c *Cedar) Decide(_ context.Context, in Input) Decision {
	d, _ := c.decide(in)
	return d
}

func (c *Cedar) decide(in Input) (Decision, cedar.Diagnostic) {
	req, extra, err := c.request(in)
	if err != nil {
		return Decision{Outcome: Deny, Reason: "cedar: building the request: " + err.Error(), Engine: "cedar"}, cedar.Diagnostic{}
	}
	ok, diag := cedar.Authorize(c.policies, requestEntities{c.entities, extra}, req)
	return c.outcome(req, ok, diag), diag
}

func (c *Cedar) outcome(req cedar.Request, ok cedar.Decision, diag cedar.Diagnostic) Decision {
	deny := func(reason string) Decision { return Decision{Outcome: Deny, Reason: reason, Engine: "cedar"} }
	for _, e := range c.sortedErrors(diag.Errors) {
		if c.info[e.PolicyID].effect == cedar.Forbid {
			return deny(fmt.Sprintf("cedar: forbid %s (%s) failed to evaluate, so the action is denied: %s", e.PolicyID, c.info[e.PolicyID].position, e.Message))
		}
	}
	ids := c.sortedReasons(diag.Reasons)
	if ok == cedar.Deny {
		if len(ids) > 0 {
			info := c.info[ids[0]]
			if info.reason != "" {
				return deny(info.reason)
			}
			return deny(fmt.Sprintf("forbidden by Cedar policy %s (%s)", ids[0], info.position))
		}
		reason := fmt.Sprintf("no Cedar permit policy matches %s doing %s on %s (Cedar denies by default)", req.Principal, req.Action, req.Resource)
		if len(diag.Errors) > 0 {
			reason += fmt.Sprintf("; %s", diag.Errors[0])
		}
		return deny(reason)
	}
	for _, id := range ids {
		if info := c.info[id]; info.hasAsk {
			reason := info.ask
			if reason == "" {
				reason = info.reason
			}
			if reason == "" {
				reason = fmt.Sprintf("Cedar policy %s (%s) asks a person", id, info.position)
			}
			return Decision{Outcome: Ask, Reason: reason, Engine: "cedar"}
		}
	}
	reason := ""
	if len(ids) > 0 {
		reason = fmt.Sprintf("permitted by Cedar policy %s (%s)", ids[0], c.info[ids[0]].position)
	}
	return Decision{Outcome: Allow, Reason: reason, Engine: "cedar"}
}

// sortedReasons orders the determining policies by file position, so the
// reason a person reads does not depend on map order.
func (c *Cedar) sortedReasons(rs []cedar.DiagnosticReason) []cedar.PolicyID {
	ids := make([]cedar.PolicyID, len(rs))
	for i, r := range rs {
		ids[i] = r.PolicyID
	}
	slices.SortFunc(ids, func(a, b cedar.PolicyID) int {
		pa, pb := c.policies.Get(a).Position(), c.policies.Get(b).Position()
		if n := strings.Compare(pa.Filename, pb.Filename); n != 0 {
			return n
		}
		return pa.Offset - pb.Offset
	})
	return ids
}

func (c *Cedar) sortedErrors(es []cedar.DiagnosticError) []cedar.DiagnosticError {
	out := slices.Clone(es)
	slices.SortFunc(out, func(a, b cedar.DiagnosticError) int { return strings.Compare(string(a.PolicyID), string(b.PolicyID)) })
	return out
}

// explain decides and lists the request and the policies that determined it.
func (c *Cedar) explain(in Input, w io.Writer) Decision {
	req, _, err := c.request(in)
	d, diag := c.decide(in)
	if err != nil {
		return d
	}
	fmt.Fprintf(w, "request:\n  principal: %s\n  action:    %s\n  resource:  %s\n  context:   %s\n", req.Principal, req.Action, req.Resource, req.Context)
	if len(diag.Reasons) == 0 {
		fmt.Fprintln(w, "determining policies: none")
	} else {
		fmt.Fprintln(w, "determining policies:")
		for _, id := range c.sortedReasons(diag.Reasons) {
			info := c.info[id]
			fmt.Fprintf(w, "  %s (%s, %s)\n", id, info.position, effectName(info.effect))
			for _, line := range strings.Split(strings.TrimSpace(info.text), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	for _, e := range c.sortedErrors(diag.Errors) {
		fmt.Fprintf(w, "error: %s (%s): %s\n", e.PolicyID, c.info[e.PolicyID].position, e.Message)
	}
	return d
}

func effectName(e types.Effect) string {
	if e == types.Permit {
		return "permit"
	}
	return "forbid"
}
