package policy

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go/types"
)

func mustDecimal(t testing.TB, s string) types.Decimal {
	t.Helper()
	d, err := types.ParseDecimal(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCedarNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want types.Value // nil: an error containing fails
		fail string
	}{
		{"0", types.Long(0), ""},
		{"-0", types.Long(0), ""},
		{"0e7", types.Long(0), ""},
		{"-0.000", types.Long(0), ""},
		{"42", types.Long(42), ""},
		{"-42", types.Long(-42), ""},
		// Integral however written, as JSON Schema counts integers.
		{"10.0", types.Long(10), ""},
		{"1e2", types.Long(100), ""},
		{"1E+2", types.Long(100), ""},
		{"1.5e1", types.Long(15), ""},
		{"2500e-2", types.Long(25), ""},
		{"9223372036854775807", types.Long(9223372036854775807), ""},
		{"-9223372036854775808", types.Long(-9223372036854775808), ""},
		{"9223372036854775808", nil, "range of a Cedar Long"},
		{"1e19", nil, "range of a Cedar Long"},
		{"1e999999999999999999999", nil, "range of a Cedar Long"},
		// Four places at most, exactly.
		{"0.5", mustDecimal(t, "0.5"), ""},
		{"-0.5", mustDecimal(t, "-0.5"), ""},
		{"0.50000", mustDecimal(t, "0.5"), ""},
		{"0.5001", mustDecimal(t, "0.5001"), ""},
		{"2.5e-3", mustDecimal(t, "0.0025"), ""},
		{"922337203685477.5807", mustDecimal(t, "922337203685477.5807"), ""},
		{"-922337203685477.5808", mustDecimal(t, "-922337203685477.5808"), ""},
		{"0.50009", nil, "more than four decimal places"},
		{"1e-5", nil, "more than four decimal places"},
		{"1e-99999999999999999999", nil, "more than four decimal places"},
		{"922337203685477.5808", nil, "range of a Cedar decimal"},
		{"1234567890123456.5", nil, "range of a Cedar decimal"},
	} {
		got, err := cedarNumber(tc.in)
		switch {
		case tc.want == nil && (err == nil || !strings.Contains(err.Error(), tc.fail)):
			t.Errorf("cedarNumber(%s) = %v, %v; want an error saying %q", tc.in, got, err, tc.fail)
		case tc.want != nil && (err != nil || !got.Equal(tc.want)):
			t.Errorf("cedarNumber(%s) = %v (%T), %v; want %v (%T)", tc.in, got, got, err, tc.want, tc.want)
		}
	}
}

// FuzzCedarNumber holds cedarNumber to an exact rational oracle: a number
// is a Long exactly when it is an integer in range, a decimal exactly when
// ten thousand times it is, and otherwise an error; never a rounded value.
func FuzzCedarNumber(f *testing.F) {
	for _, s := range []string{"0", "10.0", "1e2", "0.50009", "0.5", "-922337203685477.5808", "9223372036854775808", "1.23e-4", "7e-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n json.Number
		if err := json.Unmarshal([]byte(s), &n); err != nil || string(n) != s {
			return // not one JSON number
		}
		got, err := cedarNumber(s)
		mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
		if len(exp) > 4 || len(mant) > 200 {
			// big.Rat would take too long to be the oracle; cedarNumber
			// must still answer.
			return
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			t.Fatalf("big.Rat cannot read %s", s)
		}
		scaled := new(big.Rat).Mul(r, big.NewRat(10000, 1))
		switch {
		case r.IsInt() && r.Num().IsInt64():
			if err != nil || !got.Equal(types.Long(r.Num().Int64())) {
				t.Fatalf("%s: got %v, %v; want Long %s", s, got, err, r.Num())
			}
		case !r.IsInt() && scaled.IsInt() && scaled.Num().IsInt64():
			want, derr := types.NewDecimal(scaled.Num().Int64(), -4)
			if derr != nil {
				t.Fatal(derr)
			}
			if err != nil || !got.Equal(want) {
				t.Fatalf("%s: got %v, %v; want decimal %v", s, got, err, want)
			}
		default:
			if err == nil {
				t.Fatalf("%s: got %v, want an error (no exact Cedar value)", s, got)
			}
		}
	})
}

const ratioCedar = `@id("answer")
permit (principal, action == Symbi::Action::"respond", resource);

@id("tools")
permit (principal, action == Symbi::Action::"call_tool", resource);

@id("ratio")
@reason("ratio above one half")
forbid (principal, action == Symbi::Action::"call_tool", resource)
when { context.arguments has ratio && context.arguments.ratio.greaterThan(decimal("0.5")) };
`

// TestCedarInexactNumbersFailClosed: a number Cedar cannot hold exactly is
// never rounded into one that passes a forbid; the deny names the
// argument. An integral number written 10.0 is a Long, as the tool's JSON
// Schema counts it.
func TestCedarInexactNumbersFailClosed(t *testing.T) {
	p := cedarPlan(false, file("policies/ratio.cedar", ratioCedar))
	g := mustGate(t, p, "policy.access")
	for _, tc := range []struct {
		args   string
		want   Outcome
		reason string
	}{
		{`{"ratio":0.5}`, Allow, ""},
		{`{"ratio":0.5001}`, Deny, "ratio above one half"},
		{`{"ratio":0.50009}`, Deny, "arguments.ratio: 0.50009 has more than four decimal places"},
		{`{"ratio":1e-7}`, Deny, "arguments.ratio"},
		{`{"nested":{"weights":[0.1, 0.123456]}}`, Deny, "arguments.nested.weights[]: 0.123456"},
		{`{"count":1e30}`, Deny, "arguments.count: 1e30 is out of the range of a Cedar Long"},
	} {
		d := g.Decide(context.Background(), input(p, toolCall("web_search", tc.args)))
		if d.Outcome != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: got %s %q, want %s containing %q", tc.args, d.Outcome, d.Reason, tc.want, tc.reason)
		}
	}
}

// TestCedarSchemaReadsIntegralNumbersAsLong: with a schema, max_results:
// 10.0 fits a Long member; an inexact number the schema does not declare
// can be read by no policy, so it is left out rather than denied; one the
// schema declares is denied.
func TestCedarSchemaReadsIntegralNumbersAsLong(t *testing.T) {
	schema := strings.Replace(toolsSchema, "arguments: { cmd?: String, query?: String, path?: String }",
		"arguments: { cmd?: String, query?: String, path?: String, max_results?: Long, ratio?: decimal, nested?: { weights?: Set<decimal> } }", 1)
	p := cedarPlan(false, file("policies/ratio.cedar", ratioCedar))
	s := file("policies/symbi.cedarschema", schema)
	p.Policies[0].Cedar.Schema = &s
	g := mustGate(t, p, "policy.access")
	for _, tc := range []struct {
		args   string
		want   Outcome
		reason string
	}{
		{`{"query":"otters","max_results":10.0}`, Allow, ""},
		{`{"query":"otters","max_results":1e1}`, Allow, ""},
		{`{"query":"otters","max_results":10.5}`, Deny, "context.arguments.max_results is a decimal where the schema wants Long"},
		{`{"query":"otters","temperature":0.123456}`, Allow, ""},
		{`{"ratio":0.50009}`, Deny, "arguments.ratio: 0.50009"},
		{`{"nested":{"weights":[0.123456]}}`, Deny, "arguments.nested.weights[]"},
		{`{"nested":{"other":0.123456}}`, Allow, ""},
	} {
		d := g.Decide(context.Background(), input(p, toolCall("web_search", tc.args)))
		if d.Outcome != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: got %s %q, want %s containing %q", tc.args, d.Outcome, d.Reason, tc.want, tc.reason)
		}
	}
}

// TestCedarResourceEffectIsTheStricter: the toolbox can know a configured
// tool to be stricter than the plan says (a wrapped MCP tool whose
// annotations say destructive); resource.effect and context.effect then
// say the stricter, never the plan's.
func TestCedarResourceEffectIsTheStricter(t *testing.T) {
	p := cedarPlan(true, file("policies/tools.cedar", toolsCedar+`
@id("ctx-destructive")
@reason("context says destructive")
forbid (principal, action == Symbi::Action::"call_tool", resource) when { context.effect == "destructive" };
`))
	g := mustGate(t, p, "policy.access")
	in := input(p, toolCall("web_search", `{"query":"x"}`)) // read in the plan
	if d := g.Decide(context.Background(), in); d.Outcome != Allow {
		t.Fatalf("as planned: %s %q", d.Outcome, d.Reason)
	}
	in.Action.Effect = "destructive"
	d := g.Decide(context.Background(), in)
	if d.Outcome != Deny || !strings.Contains(d.Reason, "destructive") {
		t.Errorf("raised to destructive: %s %q, want a deny", d.Outcome, d.Reason)
	}
	// An action effect weaker than the plan's never lowers it.
	in = input(p, toolCall("shell", `{"cmd":"ls"}`)) // destructive in the plan
	in.Action.Effect = "read"
	if d := g.Decide(context.Background(), in); d.Outcome != Deny {
		t.Errorf("lowered to read: %s %q, want the plan's destructive to stand", d.Outcome, d.Reason)
	}
}
