package policy

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/symbi-dev/symbi/plan"
)

const toolsCedar = `// Researchers may read; writes ask a person; destructive tools are forbidden.
@id("read")
permit (principal == Symbi::Agent::"researcher", action == Symbi::Action::"call_tool", resource)
when { resource.effect == "read" };

@id("write")
@ask("writes need a person")
permit (principal, action == Symbi::Action::"call_tool", resource)
when { resource.effect == "write" };

@id("no-destructive")
@reason("destructive tools are not allowed")
forbid (principal, action == Symbi::Action::"call_tool", resource)
when { resource.effect == "destructive" };

@id("spend")
@reason("over the spend limit")
forbid (principal, action, resource)
when { context.usage.cost_usd.greaterThan(decimal("0.5")) };

@id("delegate")
permit (principal in Symbi::Team::"research", action == Symbi::Action::"delegate", resource == Symbi::Agent::"critic");

@id("respond")
permit (principal, action == Symbi::Action::"respond", resource)
unless { context.arguments has content && context.arguments.content like "*secret*" };

permit (principal, action == Symbi::Action::"terminate", resource) when { resource == principal };
`

const toolsSchema = `namespace Symbi {
  entity Team;
  entity Agent in [Team];
  entity Tool {
    effect: String,
    tags: Set<String>,
    idempotent?: Bool,
  };
  type Usage = {
    model_calls: Long, tool_calls: Long, prompt_tokens: Long,
    completion_tokens: Long, total_tokens: Long, cost_usd: decimal,
  };
  action call_tool appliesTo {
    principal: Agent, resource: Tool,
    context: { arguments: { cmd?: String, query?: String, path?: String }, effect: String, iteration: Long, usage: Usage },
  };
  action delegate appliesTo {
    principal: Agent, resource: Agent,
    context: { arguments: { target?: String, task?: String }, effect: String, iteration: Long, usage: Usage },
  };
  action respond, terminate appliesTo {
    principal: Agent, resource: Agent,
    context: { arguments: { content?: String, reason?: String }, effect: String, iteration: Long, usage: Usage },
  };
}
`

const entitiesJSON = `[
  {"uid": {"type": "Symbi::Agent", "id": "researcher"}, "attrs": {}, "parents": [{"type": "Symbi::Team", "id": "research"}]},
  {"uid": {"type": "Symbi::Team", "id": "research"}, "attrs": {}, "parents": []}
]`

func cedarPlan(withSchema bool, policies ...plan.FileRef) *plan.Plan {
	pol := cedarPolicy("policy.access", policies...)
	ents := file("policies/entities.json", entitiesJSON)
	pol.Cedar.Entities = &ents
	if withSchema {
		s := file("policies/symbi.cedarschema", toolsSchema)
		pol.Cedar.Schema = &s
	}
	return testPlan(pol)
}

func TestCedarDecisions(t *testing.T) {
	p := cedarPlan(true, file("policies/tools.cedar", toolsCedar))
	g := mustGate(t, p, "policy.access")
	spent := input(p, toolCall("web_search", `{"query":"x"}`))
	spent.Run.Usage.CostUSD = 0.75
	critic := input(p, toolCall("web_search", `{}`))
	critic.Agent.Name = "critic"
	mcp := input(p, Action{Type: ToolCall, Tool: "fs_read", Effect: "read"})
	for _, tc := range []struct {
		name   string
		in     Input
		want   Outcome
		reason string
	}{
		{"permit", input(p, toolCall("web_search", `{"query":"x"}`)), Allow, "permitted by Cedar policy read (policies/tools.cedar:2)"},
		{"forbid with @reason", input(p, toolCall("shell", `{"cmd":"ls"}`)), Deny, "destructive tools are not allowed"},
		{"@ask on a permit", input(p, toolCall("write_file", `{"path":"/tmp/x"}`)), Ask, "writes need a person"},
		{"spend limit from usage", spent, Deny, "over the spend limit"},
		{"default deny says so", critic, Deny, `no Cedar permit policy matches Symbi::Agent::"critic" doing Symbi::Action::"call_tool" on Symbi::Tool::"web_search" (Cedar denies by default)`},
		{"delegate through a team from the entities file", input(p, Action{Type: Delegate, Target: "critic", Task: "check"}), Allow, "delegate"},
		{"delegate to another agent", input(p, Action{Type: Delegate, Target: "researcher"}), Deny, "default"},
		{"respond", input(p, Action{Type: Respond, Content: "42"}), Allow, ""},
		{"respond with a secret", input(p, Action{Type: Respond, Content: "my secret"}), Deny, "default"},
		{"terminate on itself", input(p, Action{Type: Terminate, Reason: "done"}), Allow, ""},
		{"tool unknown to the plan uses the action's effect", mcp, Allow, "read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Decide(context.Background(), tc.in)
			if d.Outcome != tc.want || !strings.Contains(d.Reason, tc.reason) || d.Engine != "cedar" {
				t.Errorf("got %s %q (%s), want %s containing %q", d.Outcome, d.Reason, d.Engine, tc.want, tc.reason)
			}
		})
	}
}

func TestCedarForbidErrorFailsClosed(t *testing.T) {
	// Without a schema nothing stops a forbid reading an attribute that is
	// not there; Cedar would skip it, symbi denies.
	p := cedarPlan(false, file("policies/tools.cedar", `
permit (principal, action, resource);
@reason("no production")
forbid (principal, action, resource) when { resource.environment == "prod" };
`))
	g := mustGate(t, p, "policy.access")
	d := g.Decide(context.Background(), input(p, toolCall("web_search", `{}`)))
	if d.Outcome != Deny || !strings.Contains(d.Reason, "failed to evaluate") || !strings.Contains(d.Reason, "policies/tools.cedar:3") {
		t.Errorf("got %s %q, want a deny naming the forbid that failed", d.Outcome, d.Reason)
	}
}

func TestCedarLoadErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    *plan.Plan
		want []string
	}{
		{"parse error with line", cedarPlan(false, file("policies/tools.cedar", "permit (principal, action, resource);\n\nforbid (principal, action resource);\n")),
			[]string{"policies/tools.cedar:3: cedar: parser error"}},
		{"policy fails the schema", cedarPlan(true, file("policies/tools.cedar", "permit (principal, action == Symbi::Action::\"call_tool\", resource)\nwhen { resource.colour == \"red\" };\n")),
			[]string{"policies/tools.cedar:1: cedar: does not validate against policies/symbi.cedarschema"}},
		{"entities fail the schema", func() *plan.Plan {
			p := cedarPlan(true, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
			bad := file("policies/entities.json", `[{"uid": {"type": "Symbi::Tool", "id": "web_search"}, "attrs": {"owner": 3}, "parents": []}]`)
			p.Policies[0].Cedar.Entities = &bad
			return p
		}(), []string{`policies/entities.json: cedar: entity Symbi::Tool::"web_search" does not validate`}},
		{"duplicate ids", cedarPlan(false, file("policies/a.cedar", "@id(\"x\")\npermit (principal, action, resource);\n"), file("policies/b.cedar", "@id(\"x\")\npermit (principal, action, resource);\n")),
			[]string{`policies/b.cedar:1: cedar: duplicate policy id "x"`}},
		{"bad entities file", func() *plan.Plan {
			p := cedarPlan(false, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
			bad := file("policies/entities.json", `{"not": "a list"}`)
			p.Policies[0].Cedar.Entities = &bad
			return p
		}(), []string{"policies/entities.json: cedar entities:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromPlan(ctx, tc.p, "policy.access", t.TempDir())
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCedarExplain(t *testing.T) {
	p := cedarPlan(true, file("policies/tools.cedar", toolsCedar))
	g := mustGate(t, p, "policy.access")
	d, text := Explain(context.Background(), g, input(p, toolCall("shell", `{"cmd":"ls"}`)))
	if d.Outcome != Deny {
		t.Fatalf("got %s", d.Outcome)
	}
	for _, want := range []string{`resource:  Symbi::Tool::"shell"`, "no-destructive (policies/tools.cedar:11, forbid)", `@reason("destructive tools are not allowed")`} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
}

func TestCedarBareAskAnnotation(t *testing.T) {
	p := cedarPlan(false, file("policies/a.cedar", "@ask\npermit (principal, action, resource);\n"))
	d := mustGate(t, p, "policy.access").Decide(context.Background(), input(p, toolCall("web_search", `{}`)))
	if d.Outcome != Ask || !strings.Contains(d.Reason, "policies/a.cedar#0 (policies/a.cedar:1) asks a person") {
		t.Errorf("got %s %q", d.Outcome, d.Reason)
	}
}

func TestCedarSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{"namespace Symbi {\n  entity Agent;\n  entity Tool {\n    effect: Strin g,\n  };\n}\n", `policies/symbi.cedarschema:4: cedar schema: column 20: expected ':', got ","`},
		{"namespace Symbi {\n  entity Agent;\n  entity Tool { effect: Nope };\n}\n", `policies/symbi.cedarschema: cedar schema: entity "Symbi::Tool" shape: attribute "effect": undefined type "Nope"`},
	} {
		p := cedarPlan(true, file("policies/a.cedar", "permit (principal, action, resource);\n"))
		s := file("policies/symbi.cedarschema", tc.schema)
		p.Policies[0].Cedar.Schema = &s
		_, err := FromPlan(context.Background(), p, "policy.access", "")
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v\nwant %s", err, tc.want)
		}
	}
}

// TestCedarSchemaMustDeclareEveryAction: a schema that leaves out an action
// symbi sends, or declares it for other types, would deny that action at
// run time; loading says so, on the schema, and the declaration it shows
// fixes it.
func TestCedarSchemaMustDeclareEveryAction(t *testing.T) {
	const head = "namespace Symbi {\n  entity Team;\n  entity Agent in [Team];\n  entity Tool { effect: String, tags: Set<String>, idempotent?: Bool };\n"
	complete := map[string]string{
		"call_tool": "  action call_tool appliesTo { principal: Agent, resource: Tool };\n",
		"delegate":  "  action delegate appliesTo { principal: Agent, resource: Agent };\n",
		"respond":   "  action respond appliesTo { principal: Agent, resource: Agent };\n",
		"terminate": "  action terminate appliesTo { principal: Agent, resource: Agent };\n",
	}
	schemaWith := func(action, decl string) string {
		text := head
		for _, name := range []string{"call_tool", "delegate", "respond", "terminate"} {
			if name == action {
				text += decl
			} else {
				text += complete[name]
			}
		}
		return text + "}\n"
	}
	for _, tc := range []struct {
		name, action, decl, want string
	}{
		{"no call_tool", "call_tool", "", `Symbi::Action::"call_tool" is not declared`},
		{"no delegate", "delegate", "", `Symbi::Action::"delegate" is not declared`},
		{"no respond", "respond", "", `Symbi::Action::"respond" is not declared; symbi validates every request against the schema and denies one that does not validate, so these actions would be denied at run time (without respond, every final answer).`},
		{"no terminate", "terminate", "", `Symbi::Action::"terminate" is not declared`},
		{"call_tool for another principal", "call_tool", "  action call_tool appliesTo { principal: Team, resource: Tool };\n",
			`Symbi::Action::"call_tool" does not apply to principal Symbi::Agent`},
		{"delegate to a tool", "delegate", "  action delegate appliesTo { principal: Agent, resource: Tool };\n",
			`Symbi::Action::"delegate" does not apply to resource Symbi::Agent`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cedarPlan(true, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
			s := file("policies/symbi.cedarschema", schemaWith(tc.action, tc.decl))
			p.Policies[0].Cedar.Schema = &s
			_, err := FromPlan(context.Background(), p, "policy.access", t.TempDir())
			les, _ := err.(LoadErrors)
			if len(les) != 1 || les[0].File != "policies/symbi.cedarschema" || !strings.Contains(les[0].Error(), tc.want) ||
				!strings.Contains(les[0].Error(), "must declare all four actions symbi sends (call_tool, delegate, respond, terminate)") {
				t.Fatalf("got %v\nwant one error on the schema containing %q", err, tc.want)
			}
			if n := strings.Count(les[0].Error(), "appliesTo"); n != 1 {
				t.Errorf("the error shows %d declarations, want only %s's:\n%v", n, tc.action, err)
			}
			// The declaration the error shows, put in the schema, fixes it.
			fix := ""
			for _, line := range strings.Split(les[0].Error(), "\n") {
				if strings.HasPrefix(line, "  action "+tc.action+" appliesTo") {
					fix = line + "\n"
				}
			}
			if fix == "" {
				t.Fatalf("no declaration of %s in %v", tc.action, err)
			}
			fixed := file("policies/symbi.cedarschema", schemaWith(tc.action, fix))
			p.Policies[0].Cedar.Schema = &fixed
			g := mustGate(t, p, "policy.access")
			for _, a := range []Action{toolCall("shell", `{"cmd":"ls"}`), {Type: Delegate, Target: "critic", Task: "check"}, {Type: Respond, Content: "42"}, {Type: Terminate, Reason: "done"}} {
				if d := g.Decide(context.Background(), input(p, a)); d.Outcome != Allow {
					t.Errorf("with %q, %s: got %s %q", strings.TrimSpace(fix), a.Type, d.Outcome, d.Reason)
				}
			}
		})
	}
}

func TestCedarJSONSchemaMustDeclareEveryAction(t *testing.T) {
	const schema = `{"Symbi": {
  "entityTypes": {
    "Team": {}, "Agent": {"memberOfTypes": ["Team"]},
    "Tool": {"shape": {"type": "Record", "attributes": {
      "effect": {"type": "String"}, "tags": {"type": "Set", "element": {"type": "String"}},
      "idempotent": {"type": "Boolean", "required": false}}}}
  },
  "actions": {
    "call_tool": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Tool"]}},
    "delegate": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Agent"]}}%s
  }
}}`
	p := cedarPlan(true, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
	s := file("policies/symbi.cedarschema.json", strings.Replace(schema, "%s", "", 1))
	p.Policies[0].Cedar.Schema = &s
	_, err := FromPlan(context.Background(), p, "policy.access", t.TempDir())
	les, _ := err.(LoadErrors)
	const respond = `"respond": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Agent"]}}`
	const terminate = `"terminate": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Agent"]}}`
	if len(les) != 1 || les[0].File != "policies/symbi.cedarschema.json" || !strings.Contains(les[0].Error(), `Declare them in the "actions" of namespace "Symbi":`) ||
		!strings.Contains(les[0].Error(), "\n  "+respond+"\n  "+terminate+"\n") {
		t.Fatalf("got %v", err)
	}
	fixed := file("policies/symbi.cedarschema.json", strings.Replace(schema, "%s", ",\n"+respond+",\n"+terminate, 1))
	p.Policies[0].Cedar.Schema = &fixed
	if d := mustGate(t, p, "policy.access").Decide(context.Background(), input(p, Action{Type: Respond, Content: "42"})); d.Outcome != Allow {
		t.Errorf("with the declarations the error shows: got %s %q", d.Outcome, d.Reason)
	}
}

// TestCedarSchemaContextMustFit: a context declaration that symbi's
// context cannot satisfy (a member it never sends, declared required; a
// member of another type) would deny every such action at run time;
// loading says so, on the schema. A tool call's arguments are each tool's
// own and only their being a record is checked.
func TestCedarSchemaContextMustFit(t *testing.T) {
	const head = "namespace Symbi {\n  entity Team;\n  entity Agent in [Team];\n  entity Tool { effect: String, tags: Set<String>, idempotent?: Bool };\n"
	decls := func(callTool, delegate, respond string) string {
		return head +
			"  action call_tool appliesTo { principal: Agent, resource: Tool" + callTool + " };\n" +
			"  action delegate appliesTo { principal: Agent, resource: Agent" + delegate + " };\n" +
			"  action respond appliesTo { principal: Agent, resource: Agent" + respond + " };\n" +
			"  action terminate appliesTo { principal: Agent, resource: Agent };\n}\n"
	}
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"fits", decls(", context: { arguments: { cmd: String, limit?: Long }, effect: String, usage?: { cost_usd: decimal, total_tokens: Long } }",
			", context: { arguments: { target: String, task?: String } }", ", context: { iteration: Long }"), ""},
		{"a member symbi never sends", decls(", context: { ticket: String }", "", ""),
			`for Symbi::Action::"call_tool", context.ticket is required by the schema and missing`},
		{"a member symbi never sends, optional", decls(", context: { ticket?: String }", "", ""), ""},
		{"iteration as a String", decls("", "", ", context: { iteration: String }"),
			`for Symbi::Action::"respond", context.iteration is a Long where the schema wants String`},
		{"cost as a Long", decls(", context: { usage: { cost_usd: Long } }", "", ""),
			`for Symbi::Action::"call_tool", context.usage.cost_usd is a decimal where the schema wants Long`},
		{"arguments not a record", decls(", context: { arguments: String }", "", ""),
			`for Symbi::Action::"call_tool", context.arguments is a Record where the schema wants String`},
		{"a delegation's task as a Long", decls("", ", context: { arguments: { task: Long } }", ""),
			`for Symbi::Action::"delegate", context.arguments.task is a String where the schema wants Long`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cedarPlan(true, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
			s := file("policies/symbi.cedarschema", tc.schema)
			p.Policies[0].Cedar.Schema = &s
			_, err := FromPlan(context.Background(), p, "policy.access", t.TempDir())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("a schema whose context fits: %v", err)
				}
				return
			}
			les, _ := err.(LoadErrors)
			if len(les) != 1 || les[0].File != "policies/symbi.cedarschema" || !strings.Contains(les[0].Error(), tc.want) ||
				!strings.Contains(les[0].Error(), "every such action would be denied at run time") {
				t.Fatalf("got %v\nwant one error on the schema containing %q", err, tc.want)
			}
		})
	}
}

func TestCedarRequestValidation(t *testing.T) {
	// call_tool requires cmd, a Long limit and a set of String labels;
	// respond declares no context at all.
	const schema = `namespace Symbi {
  entity Team;
  entity Agent in [Team];
  entity Tool { effect: String, tags: Set<String>, idempotent?: Bool };
  action call_tool appliesTo {
    principal: Agent, resource: Tool,
    context: { arguments: { cmd: String, limit?: Long, labels?: Set<String> }, effect: String },
  };
  action delegate, respond, terminate appliesTo { principal: Agent, resource: Agent };
}
`
	p := cedarPlan(true, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
	s := file("policies/symbi.cedarschema", schema)
	p.Policies[0].Cedar.Schema = &s
	g := mustGate(t, p, "policy.access")
	const denied = "cedar: the request does not validate against policies/symbi.cedarschema, so the action is denied: "
	for _, tc := range []struct {
		name   string
		in     Input
		want   Outcome
		reason string
	}{
		// iteration and usage are not declared: a validated policy cannot
		// read them, so they are left out rather than failing the request;
		// so are arguments the schema does not name.
		{"undeclared members are left out", input(p, toolCall("shell", `{"cmd":"ls","verbose":true,"limit":3}`)), Allow, ""},
		{"wrong type", input(p, toolCall("shell", `{"cmd":"ls","limit":"many"}`)), Deny,
			denied + `for Symbi::Action::"call_tool", context.arguments.limit is a String where the schema wants Long`},
		{"wrong type in a set", input(p, toolCall("shell", `{"cmd":"ls","labels":["a",2]}`)), Deny,
			denied + `for Symbi::Action::"call_tool", context.arguments.labels[] is a Long where the schema wants String`},
		{"required argument missing", input(p, toolCall("shell", `{}`)), Deny,
			denied + `for Symbi::Action::"call_tool", context.arguments.cmd is required by the schema and missing`},
		{"context the schema does not declare is left out", input(p, Action{Type: Respond, Content: "42"}), Allow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Decide(context.Background(), tc.in)
			if d.Outcome != tc.want || d.Reason != tc.reason && tc.reason != "" {
				t.Errorf("got %s %q\nwant %s %q", d.Outcome, d.Reason, tc.want, tc.reason)
			}
		})
	}
	// Without a schema nothing is validated or left out.
	p.Policies[0].Cedar.Schema = nil
	if d := mustGate(t, p, "policy.access").Decide(context.Background(), input(p, toolCall("shell", `{"limit":"many"}`))); d.Outcome != Allow {
		t.Errorf("without a schema: got %s %q", d.Outcome, d.Reason)
	}
}

func TestLoaderSharesPlanEntitiesAndSchemas(t *testing.T) {
	p := cedarScalePlan(3, 10)
	l := NewLoader(p, t.TempDir())
	var gates []*Cedar
	for _, pol := range p.Policies {
		g, err := l.Gate(context.Background(), pol.Address)
		if err != nil {
			t.Fatal(err)
		}
		gates = append(gates, g.(*Cedar))
	}
	if len(l.schemas) != 1 {
		t.Errorf("the schema was parsed %d times, want once", len(l.schemas))
	}
	for _, g := range gates[1:] {
		if g.schema != gates[0].schema || reflect.ValueOf(g.entities.plan).UnsafePointer() != reflect.ValueOf(gates[0].entities.plan).UnsafePointer() {
			t.Errorf("%s does not share the plan's entities and schema with %s", g.address, gates[0].address)
		}
	}
	// The entities file's researcher (with its team) hides the plan's.
	if e, _ := gates[0].entities.Get(types.NewEntityUID(cedarAgentType, "researcher")); e.Parents.Len() != 1 {
		t.Errorf("researcher: %v, want the entities file's parents", e)
	}
	if e, _ := gates[0].entities.Get(types.NewEntityUID(cedarToolType, "t0003")); e.Attributes.Len() != 3 {
		t.Errorf("t0003: %v, want the plan's effect, tags and idempotent", e)
	}
}

func TestCedarPlanEntityFailsSchema(t *testing.T) {
	// tags is not declared: every generated tool fails, in UID order, and
	// the error says where the entity came from.
	p := cedarPlan(true, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
	s := file("policies/symbi.cedarschema", "namespace Symbi {\n  entity Team;\n  entity Agent in [Team];\n  entity Tool { effect: String, idempotent?: Bool };\n"+
		"  action call_tool appliesTo { principal: Agent, resource: Tool };\n  action delegate, respond, terminate appliesTo { principal: Agent, resource: Agent };\n}\n")
	p.Policies[0].Cedar.Schema = &s
	_, err := FromPlan(context.Background(), p, "policy.access", t.TempDir())
	les, _ := err.(LoadErrors)
	if len(les) != 3 || les[0].File != "(generated from the plan)" || !strings.Contains(les[0].Error(), `entity Symbi::Tool::"shell" does not validate`) || !strings.Contains(les[2].Error(), `Symbi::Tool::"write_file"`) {
		t.Errorf("got %v", err)
	}
}

// FuzzCedarSchema loads arbitrary schema text (the human-readable form and
// the JSON form) with the test plan's entities and, when it loads, decides
// one action of each kind: an error or a decision, never a panic.
func FuzzCedarSchema(f *testing.F) {
	f.Add(toolsSchema, false)
	f.Add("namespace Symbi {\n  entity Agent;\n  entity Tool;\n  action call_tool appliesTo { principal: Agent, resource: Tool, context: { arguments: String } };\n}\n", false)
	f.Add(`{"Symbi": {"entityTypes": {"Agent": {}, "Tool": {}}, "actions": {"respond": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Agent"], "context": {"type": "Record", "attributes": {"iteration": {"type": "String"}}}}}}}}`, true)
	f.Fuzz(func(t *testing.T, schema string, isJSON bool) {
		p := cedarPlan(false, file("policies/tools.cedar", "permit (principal, action, resource);\n"))
		name := "policies/symbi.cedarschema"
		if isJSON {
			name += ".json"
		}
		s := file(name, schema)
		p.Policies[0].Cedar.Schema = &s
		g, err := FromPlan(context.Background(), p, "policy.access", "")
		if err != nil {
			return
		}
		for _, a := range []Action{toolCall("shell", `{"cmd":"ls","n":1.5,"tags":["a"]}`), {Type: Delegate, Target: "critic", Task: "check"}, {Type: Respond, Content: "42"}, {Type: Terminate, Reason: "done"}} {
			g.Decide(context.Background(), input(p, a))
		}
	})
}
