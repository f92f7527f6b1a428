package stdlib

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// ErrNoPricing is cost()'s error for a model whose block has no pricing.
var ErrNoPricing = errors.New("model has no pricing")

// ErrBadDuration is wrapped by every duration that fails to parse.
var ErrBadDuration = errors.New("invalid duration")

// EnvUnsetError is env()'s error for a variable that is not set when the
// call gave no default.
type EnvUnsetError struct{ Name string }

func (e *EnvUnsetError) Error() string {
	return fmt.Sprintf("environment variable %q is not set and env() was given no default", e.Name)
}

// ParseDuration reads a duration as configurations write it ("30s", "5m",
// "1h30m", "500ms"). Negative durations and bare numbers are errors, so "30"
// is never silently read as nanoseconds.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w %q: write a non-negative number with a unit, like \"30s\", \"5m\" or \"1h30m\"", ErrBadDuration, s)
	}
	return d, nil
}

// MatchGlob is glob_match() and the matcher tool profiles use (path.Match
// semantics): * matches any run of characters except '/', ? one character
// except '/', and [...] a class. Tool names contain no '/', so for them the
// rules are simply * and ?. Policy rules' argument globs differ on purpose:
// there * crosses '/', so "path=/etc/*" denies everything under /etc.
func MatchGlob(pattern, s string) (bool, error) {
	ok, err := path.Match(pattern, s)
	if err != nil {
		return false, fmt.Errorf("glob pattern %q: %w", pattern, err)
	}
	return ok, nil
}

func envFunc(lookup func(string) (string, bool)) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the value of an environment variable, or the default when it is unset; without a default an unset variable is an error. Expressions that call env() are evaluated at run time, so the value never enters a plan.",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam:    &function.Parameter{Name: "default", Type: cty.String},
		Type: func(args []cty.Value) (cty.Type, error) {
			if len(args) > 2 {
				return cty.NilType, function.NewArgErrorf(2, "env() takes a name and at most one default")
			}
			return cty.String, nil
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			if v, ok := lookup(name); ok {
				return cty.StringVal(v), nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return cty.NilVal, &EnvUnsetError{Name: name}
		},
	})
}

// readFile resolves p against the calling file's directory, reports the read,
// and insists on UTF-8 so a binary file fails here rather than in a prompt.
func readFile(opts Options, p string) (string, error) {
	if !filepath.IsAbs(p) && opts.BaseDir != "" {
		p = filepath.Join(opts.BaseDir, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("reading %s: the file is not UTF-8 text", p)
	}
	if opts.OnRead != nil {
		opts.OnRead(p, b)
	}
	return string(b), nil
}

func fileFunc(opts Options) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the content of a UTF-8 text file. A relative path is resolved against the directory of the file that calls file().",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := readFile(opts, args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(s), nil
		},
	})
}

func templateFileFunc(opts Options, funcs func() map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Description: "Reads a file and renders it as an HCL template (${...} interpolations and %{...} directives) with the given variables, which must be a map or object. A relative path is resolved against the directory of the calling file.",
		Params: []function.Parameter{
			{Name: "path", Type: cty.String},
			{Name: "vars", Type: cty.DynamicPseudoType},
		},
		Type: func(args []cty.Value) (cty.Type, error) {
			ty := args[1].Type()
			if !(ty.IsMapType() || ty.IsObjectType()) {
				return cty.NilType, function.NewArgErrorf(1, "vars must be a map or an object, not %s", ty.FriendlyName())
			}
			return cty.DynamicPseudoType, nil
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if !args[1].IsWhollyKnown() {
				return cty.DynamicVal, nil
			}
			return renderTemplate(opts, args[0].AsString(), args[1], funcs())
		},
	})
}

func renderTemplate(opts Options, p string, vars cty.Value, funcs map[string]function.Function) (cty.Value, error) {
	src, err := readFile(opts, p)
	if err != nil {
		return cty.NilVal, err
	}
	expr, diags := hclsyntax.ParseTemplate([]byte(src), p, hcl.Pos{Line: 1, Column: 1, Byte: 0})
	if diags.HasErrors() {
		return cty.NilVal, function.NewArgErrorf(0, "template %s: %s", p, diags.Error())
	}
	if vars.IsNull() {
		return cty.NilVal, function.NewArgErrorf(1, "vars must not be null")
	}
	names := make(map[string]cty.Value)
	for it := vars.ElementIterator(); it.Next(); {
		k, v := it.Element()
		name := k.AsString()
		if !hclsyntax.ValidIdentifier(name) {
			return cty.NilVal, function.NewArgErrorf(1, "vars key %q is not a valid identifier, so a template cannot refer to it", name)
		}
		names[name] = v
	}
	// Checked before evaluating so the error names the missing key and where
	// the template uses it, not just "unknown variable".
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		if _, ok := names[root]; !ok {
			return cty.NilVal, function.NewArgErrorf(1, "vars has no key %q, which the template uses at %s", root, tr.SourceRange())
		}
	}
	val, diags := expr.Value(&hcl.EvalContext{Variables: names, Functions: funcs})
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("rendering %s: %s", p, diags.Error())
	}
	return val, nil
}

var globMatchFunc = function.New(&function.Spec{
	Description: "Reports whether s matches the glob pattern: * matches any run of characters except '/', ? one character except '/', and [...] a character class (path.Match semantics, as in tool profiles; note that in a policy rule's argument glob * also crosses '/').",
	Params: []function.Parameter{
		{Name: "pattern", Type: cty.String},
		{Name: "s", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		ok, err := MatchGlob(args[0].AsString(), args[1].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgError(0, err)
		}
		return cty.BoolVal(ok), nil
	},
})

var tokensFunc = function.New(&function.Spec{
	Description: "Estimates the number of tokens in the text with the same estimator the engine uses for budget preflight and context fitting.",
	Params:      []function.Parameter{{Name: "text", Type: cty.String}},
	Type:        function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.NumberIntVal(int64(EstimateTokens(args[0].AsString()))), nil
	},
})

var sha256Func = function.New(&function.Spec{
	Description: "Returns the SHA-256 hash of the string's UTF-8 bytes, as lowercase hexadecimal.",
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sum := sha256.Sum256([]byte(args[0].AsString()))
		return cty.StringVal(hex.EncodeToString(sum[:])), nil
	},
})

var durationFunc = function.New(&function.Spec{
	Description: "Parses a duration such as \"30s\", \"5m\", \"1h30m\" or \"500ms\" and returns its length in seconds.",
	Params:      []function.Parameter{{Name: "s", Type: cty.String}},
	Type:        function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		d, err := ParseDuration(args[0].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgError(0, err)
		}
		secs := new(big.Float).Quo(new(big.Float).SetInt64(int64(d)), big.NewFloat(1e9))
		return cty.NumberVal(secs), nil
	},
})

var costFunc = function.New(&function.Spec{
	Description: "Returns the cost in USD of a call to the model with the given prompt and completion token counts, from the model's pricing block (USD per million tokens). Fails when the model has no pricing.",
	Params: []function.Parameter{
		{Name: "model", Type: cty.DynamicPseudoType, AllowNull: true},
		{Name: "prompt_tokens", Type: cty.Number},
		{Name: "completion_tokens", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		in, out, err := modelPricing(args[0])
		if err != nil {
			return cty.NilVal, err
		}
		for i := 1; i <= 2; i++ {
			if args[i].LessThan(cty.Zero).True() {
				return cty.NilVal, function.NewArgErrorf(i, "token count must not be negative")
			}
		}
		if !in.IsKnown() || !out.IsKnown() {
			return cty.UnknownVal(cty.Number), nil
		}
		perMillion := cty.NumberIntVal(1_000_000)
		return args[1].Multiply(in).Add(args[2].Multiply(out)).Divide(perMillion), nil
	},
})

// modelPricing reads model.pricing.{input,output}_usd_per_mtok. Unknown
// prices come back unknown so that validate, which compiles with unknown
// inputs, does not fail on them.
func modelPricing(model cty.Value) (in, out cty.Value, err error) {
	if model.IsNull() {
		return cty.NilVal, cty.NilVal, function.NewArgErrorf(0, "model is null; pass a model such as model.fast")
	}
	ty := model.Type()
	if !ty.IsObjectType() {
		return cty.NilVal, cty.NilVal, function.NewArgErrorf(0, "model must be a model object such as model.fast, not %s", ty.FriendlyName())
	}
	if !ty.HasAttribute("pricing") {
		return cty.NilVal, cty.NilVal, ErrNoPricing
	}
	pricing := model.GetAttr("pricing")
	if !pricing.IsKnown() {
		return cty.UnknownVal(cty.Number), cty.UnknownVal(cty.Number), nil
	}
	if pricing.IsNull() {
		return cty.NilVal, cty.NilVal, ErrNoPricing
	}
	pty := pricing.Type()
	if !pty.IsObjectType() && !pty.IsMapType() {
		return cty.NilVal, cty.NilVal, function.NewArgErrorf(0, "model pricing must be an object, not %s", pty.FriendlyName())
	}
	price := func(name string) (cty.Value, error) {
		var v cty.Value
		switch {
		case pty.IsObjectType() && pty.HasAttribute(name):
			v = pricing.GetAttr(name)
		case pty.IsMapType() && pricing.HasIndex(cty.StringVal(name)).True():
			v = pricing.Index(cty.StringVal(name))
		default:
			return cty.NilVal, function.NewArgErrorf(0, "model pricing has no %s", name)
		}
		if v.IsNull() {
			return cty.NilVal, function.NewArgErrorf(0, "model pricing %s is null", name)
		}
		n, err := convert.Convert(v, cty.Number)
		if err != nil {
			return cty.NilVal, function.NewArgErrorf(0, "model pricing %s: %s", name, err)
		}
		return n, nil
	}
	if in, err = price("input_usd_per_mtok"); err != nil {
		return cty.NilVal, cty.NilVal, err
	}
	if out, err = price("output_usd_per_mtok"); err != nil {
		return cty.NilVal, cty.NilVal, err
	}
	return in, out, nil
}
