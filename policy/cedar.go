package policy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/resolved"
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
// is given) once in NewCedar or Loader.Gate. cedar.Authorize is pure, so one
// Cedar serves every goroutine.
//
// The request: principal Symbi::Agent::"<agent>"; action
// Symbi::Action::"call_tool" (or "delegate", "respond", "terminate");
// resource Symbi::Tool::"<tool>" for a tool call, Symbi::Agent::"<target>"
// for a delegation, and the agent itself for respond and terminate; context
// {arguments, effect, iteration, usage}. With a schema, the context keeps
// only what the schema declares and the request is validated against it; a
// request that does not validate is a deny that says why.
//
// A forbid wins (its @reason annotation is the deny reason); a deny with no
// permit is Cedar's default deny and says so; an allow whose permits carry
// @ask asks a person. A forbid that fails to evaluate denies with the error:
// Cedar would skip it, which would fail open.
type Cedar struct {
	address  string
	policies *cedar.PolicySet
	info     map[cedar.PolicyID]cedarPolicyInfo
	entities cedarEntities
	schema   *cedarSchema // nil without a schema
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
// schema when there is one. Every problem is reported. To prepare several
// Cedar policies of one plan, use a Loader, which builds the plan's
// entities once for all of them.
func NewCedar(address string, pol plan.CedarPolicy, p *plan.Plan, baseDir string) (*Cedar, error) {
	return NewLoader(p, baseDir).cedar(address, pol)
}

func (l *Loader) cedar(address string, pol plan.CedarPolicy) (*Cedar, error) {
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
		text, err := ref.Load(l.baseDir)
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
	own, err := l.fileEntities(pol.Entities)
	if err != nil {
		errs = append(errs, &LoadError{Policy: address, File: pol.Entities.Path, Err: fmt.Errorf("cedar entities: %w", err)})
	}
	c.entities = cedarEntities{own: own, plan: l.planEntities()}
	if pol.Schema != nil && len(errs) == 0 {
		s := l.schema(*pol.Schema)
		if s.err != nil {
			errs = append(errs, schemaError(address, s.path, s.err))
		} else {
			c.schema = s
			if s.actions != nil {
				errs = append(errs, &LoadError{Policy: address, File: s.path, Err: s.actions})
			}
			for _, loc := range all {
				if err := s.validator.Policy(string(loc.id), (*xast.Policy)(loc.policy.AST())); err != nil {
					errs = append(errs, &LoadError{Policy: address, File: loc.file, Line: loc.policy.Position().Line, Err: fmt.Errorf("cedar: does not validate against %s: %v", s.path, err)})
				}
			}
			errs = append(errs, c.entityErrors(pol.Entities)...)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// entityErrors validates the entities file's entities here, and reports the
// plan's entities that failed when the schema was loaded, unless the file
// replaced them; in UID order.
func (c *Cedar) entityErrors(file *plan.FileRef) LoadErrors {
	s := c.schema
	type failure struct {
		uid types.EntityUID
		err error
	}
	var fails []failure
	for uid, e := range c.entities.own {
		if err := s.validator.Entity(e); err != nil {
			fails = append(fails, failure{uid, err})
		}
	}
	for uid, err := range s.planErrs {
		if _, replaced := c.entities.own[uid]; !replaced {
			fails = append(fails, failure{uid, err})
		}
	}
	slices.SortFunc(fails, func(a, b failure) int { return compareUIDs(a.uid, b.uid) })
	var errs LoadErrors
	for _, f := range fails {
		name := "(generated from the plan)"
		if _, fromFile := c.entities.own[f.uid]; fromFile {
			name = file.Path
		}
		errs = append(errs, &LoadError{Policy: c.address, File: name, Err: fmt.Errorf("cedar: entity %s does not validate against %s: %v", f.uid, s.path, f.err)})
	}
	return errs
}

var cedarPosition = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<input>:(\d+):(\d+)`) })

// cedarParseError rewrites cedar-go's "<input>:3:5" into the file's own
// position, so the error reads like every other compile error.
func cedarParseError(address, file string, err error) *LoadError {
	msg := err.Error()
	le := &LoadError{Policy: address, File: file}
	if m := cedarPosition().FindStringSubmatch(msg); m != nil {
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

// cedarSchema is a parsed Cedar schema with the plan's entities checked
// against it, shared by every policy of a Loader that names the file.
type cedarSchema struct {
	path      string
	err       error // the schema does not load, parse or resolve
	resolved  *resolved.Schema
	validator *validate.Validator
	planErrs  map[types.EntityUID]error // plan entities that do not validate
	actions   error                     // an action symbi sends is missing or does not apply
}

// newCedarSchema parses a schema in the human-readable form or, for a .json
// file, the JSON form, and validates the plan's entities against it.
func newCedarSchema(ref plan.FileRef, baseDir string, planEntities types.EntityMap) *cedarSchema {
	s := &cedarSchema{path: ref.Path}
	b, err := ref.Load(baseDir)
	if err != nil {
		s.err = err
		return s
	}
	var sc schema.Schema
	sc.SetFilename(ref.Path)
	if path.Ext(ref.Path) == ".json" {
		err = sc.UnmarshalJSON(b)
	} else {
		err = sc.UnmarshalCedar(b)
	}
	if err == nil {
		s.resolved, err = sc.Resolve()
	}
	if err != nil {
		s.err = fmt.Errorf("cedar schema: %w", err)
		return s
	}
	s.actions = s.checkActions()
	if s.actions == nil {
		s.actions = s.checkContext()
	}
	s.validator = validate.New(s.resolved, validate.WithStrict())
	s.planErrs = map[types.EntityUID]error{}
	for uid, e := range planEntities {
		if err := s.validator.Entity(e); err != nil {
			s.planErrs[uid] = err
		}
	}
	return s
}

// cedarActions are the actions symbi sends, each with its resource type
// (the principal is always a Symbi::Agent) and the arguments its hint
// declares.
var cedarActions = []struct {
	typ       ActionType // its Cedar name is cedarActionName(typ)
	resource  types.EntityType
	arguments string
}{
	{ToolCall, cedarToolType, ""},
	{Delegate, cedarAgentType, "target?: String, task?: String"},
	{Respond, cedarAgentType, "content?: String"},
	{Terminate, cedarAgentType, "reason?: String"},
}

// checkActions requires the schema to declare every action symbi sends, for
// a Symbi::Agent principal and the resource type symbi uses. Each request
// is validated against the schema and one that does not validate is
// denied, so a schema without respond would deny every final answer at run
// time. All four are required whatever the agents can do: one rule, told
// when the schema is written rather than when an agent first delegates.
// The error shows the declarations to add, in the schema's own syntax.
func (s *cedarSchema) checkActions() error {
	var problems []string
	var fixes strings.Builder
	respondFails := false
	isJSON := path.Ext(s.path) == ".json"
	for _, a := range cedarActions {
		name := cedarActionName(a.typ)
		uid := types.NewEntityUID(cedarActionType, types.String(name))
		def, ok := s.resolved.Actions[uid]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not declared", uid))
		case def.AppliesTo == nil || !slices.Contains(def.AppliesTo.Principals, cedarAgentType):
			problems = append(problems, fmt.Sprintf("%s does not apply to principal %s", uid, cedarAgentType))
		case !slices.Contains(def.AppliesTo.Resources, a.resource):
			problems = append(problems, fmt.Sprintf("%s does not apply to resource %s", uid, a.resource))
		default:
			continue
		}
		respondFails = respondFails || a.typ == Respond
		resource := strings.TrimPrefix(string(a.resource), "Symbi::")
		switch {
		case isJSON:
			fmt.Fprintf(&fixes, "\n  %q: {\"appliesTo\": {\"principalTypes\": [\"Agent\"], \"resourceTypes\": [%q]}}", name, resource)
		case a.arguments == "":
			fmt.Fprintf(&fixes, "\n  action %s appliesTo { principal: Agent, resource: %s, context: { effect: String } };", name, resource)
		default:
			fmt.Fprintf(&fixes, "\n  action %s appliesTo { principal: Agent, resource: %s, context: { arguments: { %s } } };", name, resource, a.arguments)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	answers := ""
	if respondFails {
		answers = " (without respond, every final answer)"
	}
	where := "namespace Symbi"
	if isJSON {
		where = `the "actions" of namespace "Symbi"`
	}
	return fmt.Errorf("cedar schema: %s; symbi validates every request against the schema and denies one that does not validate, "+
		"so these actions would be denied at run time%s. Declare them in %s:%s\n"+
		"The schema must declare all four actions symbi sends (call_tool, delegate, respond, terminate), each for principal Agent "+
		"and the resource symbi uses (Tool for call_tool, Agent for the others)",
		strings.Join(problems, "; "), answers, where, fixes.String())
}

// checkContext requires each action's context declaration to fit the
// context symbi sends (see request): a member symbi never sends declared
// required, or a member declared with another type, would fail every
// request's validation, so every such action would be denied at run time.
// A tool call's arguments are each tool's own, so for call_tool only their
// being a record is checked; the other actions' arguments are fixed.
func (s *cedarSchema) checkContext() error {
	var problems []string
	for _, a := range cedarActions {
		// checkActions has found every action declared, with appliesTo.
		uid := types.NewEntityUID(cedarActionType, types.String(cedarActionName(a.typ)))
		want := s.resolved.Actions[uid].AppliesTo.Context
		sent, err := sampleContext(a.typ)
		if err != nil {
			return err
		}
		if a.typ == ToolCall {
			if attr, ok := want["arguments"]; ok {
				if _, isRecord := attr.Type.(resolved.RecordType); !isRecord {
					problems = append(problems, fmt.Sprintf("for %s, context.arguments is a Record where the schema wants %s", uid, typeName(attr.Type)))
				}
				want = maps.Clone(want)
				delete(want, "arguments")
			}
		}
		if why := recordMismatch("context", project(sent, want).(types.Record), want); why != "" {
			problems = append(problems, fmt.Sprintf("for %s, %s", uid, why))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("cedar schema: %s; symbi sends the context {arguments, effect: String, iteration: Long, usage: "+
		"{model_calls, tool_calls, prompt_tokens, completion_tokens, total_tokens: Long, cost_usd: decimal}} and denies a "+
		"request that does not validate, so every such action would be denied at run time", strings.Join(problems, "; "))
}

// sampleContext is a context symbi sends for the action, built as
// request builds it; a tool call's arguments are left empty.
func sampleContext(t ActionType) (types.Record, error) {
	_, args, err := Action{Type: t}.subject() // a tool call without arguments has {}
	if err != nil {
		return types.Record{}, err
	}
	ctx, _, err := cedarContext(args, "", 0, Usage{})
	return ctx, err
}

// typeName is a resolved type as the schema's human-readable form spells it.
func typeName(t resolved.IsType) string {
	switch t := t.(type) {
	case resolved.StringType:
		return "String"
	case resolved.LongType:
		return "Long"
	case resolved.BoolType:
		return "Bool"
	case resolved.ExtensionType:
		return string(t)
	case resolved.EntityType:
		return string(t)
	case resolved.SetType:
		return "Set"
	}
	return "Record"
}

// check validates a request, and the entity a request adds, against the
// schema. Principal and resource type errors are cedar-go's own; a context
// that does not fit is described by the path that does not.
func (s *cedarSchema) check(req cedar.Request, extra *types.Entity) error {
	if err := s.validator.Request(req); err != nil {
		if a, ok := s.resolved.Actions[req.Action]; ok && a.AppliesTo != nil {
			if why := recordMismatch("context", req.Context, a.AppliesTo.Context); why != "" {
				return fmt.Errorf("for %s, %s", req.Action, why)
			}
		}
		return err
	}
	if extra != nil {
		if err := s.validator.Entity(*extra); err != nil {
			return fmt.Errorf("entity %s: %v", extra.UID, err)
		}
	}
	return nil
}

// declares reports whether the schema declares, for the action's context,
// the member at path (arguments.ratio), so that a policy could read it. A
// path the schema gives another shape (a record member where it wants a
// Long) counts as declared: the value is not what the schema says, and the
// caller must not quietly drop it.
func (s *cedarSchema) declares(action types.EntityUID, path []pathStep) bool {
	a, ok := s.resolved.Actions[action]
	if !ok || a.AppliesTo == nil {
		return true
	}
	var t resolved.IsType = a.AppliesTo.Context
	for _, step := range path {
		switch tt := t.(type) {
		case resolved.RecordType:
			if step.elem {
				return true
			}
			attr, ok := tt[types.String(step.key)]
			if !ok {
				return false
			}
			t = attr.Type
		case resolved.SetType:
			if !step.elem {
				return true
			}
			t = tt.Element
		default:
			return true
		}
	}
	return true
}

// declared keeps only the members of a request's context that the schema
// declares for the action, at every depth. A strictly validated policy can
// read no other member, so Cedar decides the same; but Cedar records are
// closed, and without this every tool argument a schema leaves out (each
// tool has its own) would make the request fail validation.
func (s *cedarSchema) declared(action types.EntityUID, ctx types.Record) types.Record {
	a, ok := s.resolved.Actions[action]
	if !ok || a.AppliesTo == nil {
		return ctx // the request fails validation and says why
	}
	return project(ctx, a.AppliesTo.Context).(types.Record)
}

func project(v types.Value, t resolved.IsType) types.Value {
	if onlyDeclared(v, t) {
		return v // the common case, without a copy
	}
	switch t := t.(type) {
	case resolved.RecordType:
		rec, ok := v.(types.Record)
		if !ok {
			return v
		}
		m := make(types.RecordMap, len(t))
		for k, e := range rec.All() {
			if attr, ok := t[k]; ok {
				m[k] = project(e, attr.Type)
			}
		}
		return types.NewRecord(m)
	case resolved.SetType:
		set, ok := v.(types.Set)
		if !ok {
			return v
		}
		out := make([]types.Value, 0, set.Len())
		for e := range set.All() {
			out = append(out, project(e, t.Element))
		}
		return types.NewSet(out...)
	}
	return v
}

// onlyDeclared reports whether v has no record member, at any depth, that
// t does not declare.
func onlyDeclared(v types.Value, t resolved.IsType) bool {
	switch t := t.(type) {
	case resolved.RecordType:
		if rec, ok := v.(types.Record); ok {
			for k, e := range rec.All() {
				if attr, ok := t[k]; !ok || !onlyDeclared(e, attr.Type) {
					return false
				}
			}
		}
	case resolved.SetType:
		if set, ok := v.(types.Set); ok {
			for e := range set.All() {
				if !onlyDeclared(e, t.Element) {
					return false
				}
			}
		}
	}
	return true
}

// recordMismatch names the first member of rec (at path) that does not fit
// t, or returns "" when it finds none: "context.arguments.query is a Long
// where the schema wants String".
func recordMismatch(at string, rec types.Record, t resolved.RecordType) string {
	names := slices.Sorted(maps.Keys(t))
	for _, k := range names {
		v, ok := rec.Get(k)
		if !ok {
			if !t[k].Optional {
				return fmt.Sprintf("%s.%s is required by the schema and missing", at, k)
			}
			continue
		}
		if why := valueMismatch(at+"."+string(k), v, t[k].Type); why != "" {
			return why
		}
	}
	return ""
}

func valueMismatch(at string, v types.Value, t resolved.IsType) string {
	fits := true
	switch t := t.(type) {
	case resolved.StringType:
		_, fits = v.(types.String)
	case resolved.LongType:
		_, fits = v.(types.Long)
	case resolved.BoolType:
		_, fits = v.(types.Boolean)
	case resolved.ExtensionType:
		fits = cedarKind(v) == string(t)
	case resolved.EntityType:
		uid, ok := v.(types.EntityUID)
		fits = ok && uid.Type == types.EntityType(t)
	case resolved.SetType:
		set, ok := v.(types.Set)
		if fits = ok; ok {
			for e := range set.All() {
				if why := valueMismatch(at+"[]", e, t.Element); why != "" {
					return why
				}
			}
		}
	case resolved.RecordType:
		if rec, ok := v.(types.Record); ok {
			return recordMismatch(at, rec, t)
		}
		fits = false
	}
	if fits {
		return ""
	}
	return fmt.Sprintf("%s is a %s where the schema wants %s", at, cedarKind(v), typeName(t))
}

func cedarKind(v types.Value) string {
	switch v.(type) {
	case types.String:
		return "String"
	case types.Long:
		return "Long"
	case types.Boolean:
		return "Bool"
	case types.Decimal:
		return "decimal"
	case types.IPAddr:
		return "ipaddr"
	case types.Datetime:
		return "datetime"
	case types.Duration:
		return "duration"
	case types.Set:
		return "Set"
	case types.Record:
		return "Record"
	case types.EntityUID:
		return "entity"
	}
	return fmt.Sprintf("%T", v)
}

// cedarPlanEntities generates an entity for every tool (effect, tags,
// idempotent) and agent of the plan. A Loader builds them once; every Cedar
// policy of the plan reads them and none writes them.
func cedarPlanEntities(p *plan.Plan) types.EntityMap {
	if p == nil {
		return types.EntityMap{}
	}
	entities := make(types.EntityMap, len(p.Tools)+len(p.Agents))
	for _, t := range p.Tools {
		uid := types.NewEntityUID(cedarToolType, types.String(addressName(t.Address)))
		entities[uid] = types.Entity{UID: uid, Attributes: toolAttributes(t.Effect, t.Tags, &t.Idempotent)}
	}
	for _, a := range p.Agents {
		uid := types.NewEntityUID(cedarAgentType, types.String(addressName(a.Address)))
		entities[uid] = types.Entity{UID: uid, Attributes: types.NewRecord(nil)}
	}
	return entities
}

// cedarFileEntities reads a policy's entities file and merges the plan's
// entity of the same UID into each: the file may add parents and
// attributes, but the plan's attributes win, because they are what the tool
// really is.
func cedarFileEntities(file *plan.FileRef, baseDir string, planEntities types.EntityMap) (types.EntityMap, error) {
	entities := types.EntityMap{}
	if file == nil {
		return entities, nil
	}
	b, err := file.Load(baseDir)
	if err == nil {
		err = json.Unmarshal(b, &entities)
	}
	if err != nil {
		return nil, err
	}
	for uid, e := range entities {
		gen, ok := planEntities[uid]
		if !ok {
			continue
		}
		attrs := e.Attributes.Map()
		if attrs == nil {
			attrs = types.RecordMap{}
		}
		for k, v := range gen.Attributes.All() {
			attrs[k] = v
		}
		e.Attributes = types.NewRecord(attrs)
		entities[uid] = e
	}
	return entities, nil
}

// cedarEntities are the entities a Cedar policy's requests see: its
// entities file (merged with the plan) over the plan's entities, which
// every Cedar policy of a Loader shares.
type cedarEntities struct {
	own  types.EntityMap
	plan types.EntityMap
}

func (e cedarEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	if x, ok := e.own[uid]; ok {
		return x, true
	}
	x, ok := e.plan[uid]
	return x, ok
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

// compareUIDs orders entities by type, then id, so errors come out in the
// same order every time.
func compareUIDs(a, b types.EntityUID) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID))
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
	effect := in.Action.Effect
	switch in.Action.Type {
	case ToolCall:
		req.Resource = types.NewEntityUID(cedarToolType, types.String(in.Action.Tool))
		known, ok := c.entities.Get(req.Resource)
		if !ok {
			extra = &types.Entity{UID: req.Resource, Attributes: toolAttributes(effect, in.Action.Tags, nil)}
			break
		}
		// The plan knows a configured tool's declared effect; the toolbox may
		// know it to be stricter (an MCP tool's annotations raise it). The
		// stricter one is what both resource.effect and context.effect say.
		declared, _ := known.Attributes.Get("effect")
		if d, isString := declared.(types.String); isString {
			effect = plan.StricterEffect(string(d), effect)
			if effect != string(d) {
				attrs := known.Attributes.Map()
				attrs["effect"] = types.String(effect)
				extra = &types.Entity{UID: known.UID, Parents: known.Parents, Attributes: types.NewRecord(attrs), Tags: known.Tags}
			}
		}
	case Delegate:
		req.Resource = types.NewEntityUID(cedarAgentType, types.String(in.Action.Target))
	default:
		req.Resource = agent
	}
	ctx, inexact, err := cedarContext(args, effect, in.Run.Iteration, in.Run.Usage)
	if err != nil {
		return cedar.Request{}, nil, err
	}
	for _, n := range inexact {
		// Left out of the context, a number no policy can read does no
		// harm; one a policy may read must not be rounded into a value that
		// passes where the real one would not.
		if c.schema == nil || c.schema.declares(req.Action, n.path) {
			return cedar.Request{}, nil, n
		}
	}
	if c.schema != nil {
		ctx = c.schema.declared(req.Action, ctx)
	}
	req.Context = ctx
	return req, extra, nil
}

// cedarContext is a request's context: {arguments, effect, iteration,
// usage}. Argument numbers that have no exact Cedar value are left out and
// listed in inexact, for request to decide whether a policy could read them.
func cedarContext(args map[string]any, effect string, iteration int, u Usage) (_ types.Record, inexact []*inexactNumber, _ error) {
	argv, err := cedarValue(args, []pathStep{{key: "arguments"}}, &inexact)
	if err != nil {
		return types.Record{}, nil, fmt.Errorf("arguments: %w", err)
	}
	if math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return types.Record{}, nil, errors.New("usage: cost_usd is not a finite number")
	}
	cost, err := types.NewDecimalFromFloat(u.CostUSD)
	if err != nil {
		return types.Record{}, nil, fmt.Errorf("usage: %w", err)
	}
	return types.NewRecord(types.RecordMap{
		"arguments": argv,
		"effect":    types.String(effect),
		"iteration": types.Long(iteration),
		"usage": types.NewRecord(types.RecordMap{
			"model_calls":       types.Long(u.ModelCalls),
			"tool_calls":        types.Long(u.ToolCalls),
			"prompt_tokens":     types.Long(u.PromptTokens),
			"completion_tokens": types.Long(u.CompletionTokens),
			"total_tokens":      types.Long(u.TotalTokens),
			"cost_usd":          cost,
		}),
	}), inexact, nil
}

// pathStep is one step from the context to a value inside it: a record's
// member, or (elem) any element of a set.
type pathStep struct {
	key  string
	elem bool
}

func formatPath(path []pathStep) string {
	var b strings.Builder
	for i, s := range path {
		switch {
		case s.elem:
			b.WriteString("[]")
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// inexactNumber is an argument number that no Cedar value holds exactly.
type inexactNumber struct {
	path []pathStep // from the context: arguments.ratio
	err  error
}

func (n *inexactNumber) Error() string {
	return fmt.Sprintf("%s: %v; it is refused rather than rounded, so no policy decides on a value the tool would not get", formatPath(n.path), n.err)
}

// cedarValue converts decoded JSON at path to a Cedar value: strings,
// booleans, numbers as cedarNumber makes them, arrays to sets, objects to
// records. A null member is left out: Cedar has no null. A number with no
// exact Cedar value is left out too, and added to inexact.
func cedarValue(v any, path []pathStep, inexact *[]*inexactNumber) (types.Value, error) {
	switch v := v.(type) {
	case string:
		return types.String(v), nil
	case bool:
		return types.Boolean(v), nil
	case json.Number:
		n, err := cedarNumber(string(v))
		if err != nil {
			*inexact = append(*inexact, &inexactNumber{path: slices.Clone(path), err: err})
			return nil, nil
		}
		return n, nil
	case []any:
		set := make([]types.Value, 0, len(v))
		for _, e := range v {
			if e == nil {
				continue
			}
			cv, err := cedarValue(e, append(path, pathStep{elem: true}), inexact)
			if err != nil {
				return nil, err
			}
			if cv != nil {
				set = append(set, cv)
			}
		}
		return types.NewSet(set...), nil
	case map[string]any:
		m := make(types.RecordMap, len(v))
		for k, e := range v {
			if e == nil {
				continue
			}
			cv, err := cedarValue(e, append(path, pathStep{key: k}), inexact)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if cv != nil {
				m[types.String(k)] = cv
			}
		}
		return types.NewRecord(m), nil
	}
	return nil, fmt.Errorf("%s has no Cedar form", jsonKind(v))
}

// maxExponent bounds the exponent cedarNumber works with: any number
// further from 1 than this is out of every Cedar range, or below its
// precision, whatever its digits.
const maxExponent = 1 << 16

// cedarNumber converts a JSON number (its text, as the decoder checked it)
// to the Cedar value that holds it exactly. An integral value — 42, but
// also 10.0, 1e2 or 1.5e1, which JSON Schema counts as integers — is a
// Long; another with at most four decimal places (0.5, 2.5e-3) is a
// decimal. Anything else has no exact Cedar value and is an error: more
// decimal places (0.50009), or outside the range of a Long or a decimal.
// Rust Cedar reads only integers from JSON and parses decimal("0.50009") as
// an error; symbi keeps to the values it can carry exactly, never rounds.
// The work is on the text, in time linear in its length: an exponent like
// 1e999999999 costs no more than 1e9.
func cedarNumber(s string) (types.Value, error) {
	text := s
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s is not a number", text)
		}
		exp = int(max(-maxExponent, min(e, maxExponent)))
		s = s[:i]
	}
	whole, frac, _ := strings.Cut(s, ".")
	// The value is digits × 10^scale.
	digits := strings.TrimLeft(whole+frac, "0")
	scale := exp - len(frac)
	if digits == "" {
		return types.Long(0), nil
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		scale++
	}
	if neg {
		digits = "-" + digits
	}
	if scale >= 0 {
		if scale > 19 {
			return nil, fmt.Errorf("%s is out of the range of a Cedar Long", text)
		}
		i, err := strconv.ParseInt(digits+strings.Repeat("0", scale), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is out of the range of a Cedar Long", text)
		}
		return types.Long(i), nil
	}
	if scale < -4 {
		return nil, fmt.Errorf("%s has more than four decimal places, which a Cedar decimal cannot hold", text)
	}
	tenThousandths, err := strconv.ParseInt(digits+strings.Repeat("0", 4+scale), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s is out of the range of a Cedar decimal", text)
	}
	d, err := types.NewDecimal(tenThousandths, -4)
	if err != nil {
		return nil, fmt.Errorf("%s is out of the range of a Cedar decimal", text)
	}
	return d, nil
}

// requestEntities layers the one entity a request adds over the shared,
// read-only entities, so concurrent requests never write to them.
type requestEntities struct {
	base  cedarEntities
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
		return Decision{Outcome: Deny, Reason: "cedar: building the request: " + err.Error(), Engine: "cedar", EngineError: true}, cedar.Diagnostic{}
	}
	if c.schema != nil {
		if err := c.schema.check(req, extra); err != nil {
			return Decision{Outcome: Deny, Reason: fmt.Sprintf("cedar: the request does not validate against %s, so the action is denied: %v", c.schema.path, err), Engine: "cedar", EngineError: true}, cedar.Diagnostic{}
		}
	}
	ok, diag := cedar.Authorize(c.policies, requestEntities{c.entities, extra}, req)
	return c.outcome(req, ok, diag), diag
}

func (c *Cedar) outcome(req cedar.Request, ok cedar.Decision, diag cedar.Diagnostic) Decision {
	deny := func(reason string) Decision { return Decision{Outcome: Deny, Reason: reason, Engine: "cedar"} }
	for _, e := range c.sortedErrors(diag.Errors) {
		if c.info[e.PolicyID].effect == cedar.Forbid {
			d := deny(fmt.Sprintf("cedar: forbid %s (%s) failed to evaluate, so the action is denied: %s", e.PolicyID, c.info[e.PolicyID].position, e.Message))
			d.EngineError = true
			return d
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
