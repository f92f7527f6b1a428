package stdlib

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2/ext/customdecode"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	ctystdlib "github.com/zclconf/go-cty/cty/function/stdlib"
)

// Func is one function of the registry, as a configuration calls it.
type Func struct {
	Name        string
	Description string
	Impl        function.Function
}

// Signature renders the call shape, e.g. "env(name string, default... string)".
// The REPL's :doc and docs/functions.md use it.
func (f Func) Signature() string {
	var b strings.Builder
	b.WriteString(f.Name)
	b.WriteByte('(')
	for i, p := range f.Impl.Params() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name + " " + typeName(p.Type))
	}
	if vp := f.Impl.VarParam(); vp != nil {
		if len(f.Impl.Params()) > 0 {
			b.WriteString(", ")
		}
		b.WriteString(vp.Name + "... " + typeName(vp.Type))
	}
	b.WriteByte(')')
	return b.String()
}

func typeName(t cty.Type) string {
	if t.Equals(customdecode.ExpressionClosureType) {
		return "expression"
	}
	return typeexpr.TypeString(t)
}

// Options connect the impure functions to their surroundings. The zero value
// reads the process environment and resolves paths against the working
// directory.
type Options struct {
	// BaseDir is the directory of the file whose expressions call file() and
	// templatefile(): relative paths resolve against it, as a reader of that
	// file expects.
	BaseDir string
	// LookupEnv reads an environment variable; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// OnRead, when set, sees every file that file() and templatefile() read,
	// with the path as resolved, so the compiler can record and hash it.
	OnRead func(path string, content []byte)
}

// Registry returns every function, sorted by name. Each call builds a new
// table, so the options of one configuration never leak into another.
func Registry(opts Options) []Func {
	funcs := table(opts)
	for i := range funcs {
		if funcs[i].Description == "" {
			funcs[i].Description = funcs[i].Impl.Description()
		}
	}
	slices.SortFunc(funcs, func(a, b Func) int { return strings.Compare(a.Name, b.Name) })
	return funcs
}

// Functions returns the registry as the table an hcl.EvalContext takes.
func Functions(opts Options) map[string]function.Function {
	funcs := table(opts)
	m := make(map[string]function.Function, len(funcs))
	for _, f := range funcs {
		m[f.Name] = f.Impl
	}
	return m
}

// table lists the functions in no particular order; the compiler builds it
// for every file, so it does no more work than it must.
func table(opts Options) []Func {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	// templatefile renders with every other function in scope. That table is
	// built on the first render only: most configurations never call it.
	var funcs []Func
	templateFuncs := sync.OnceValue(func() map[string]function.Function {
		// A template may not call templatefile itself: a template that
		// includes itself would never end, and Terraform draws the same line.
		m := make(map[string]function.Function, len(funcs)-1)
		for _, f := range funcs {
			if f.Name != "templatefile" {
				m[f.Name] = f.Impl
			}
		}
		return m
	})

	funcs = []Func{
		// Strings.
		{Name: "chomp", Impl: ctystdlib.ChompFunc},
		{Name: "endswith", Impl: endsWithFunc},
		{Name: "format", Impl: ctystdlib.FormatFunc},
		{Name: "formatlist", Impl: ctystdlib.FormatListFunc},
		{Name: "indent", Impl: ctystdlib.IndentFunc},
		{Name: "join", Impl: ctystdlib.JoinFunc},
		{Name: "lower", Impl: ctystdlib.LowerFunc},
		{Name: "regex", Impl: ctystdlib.RegexFunc},
		{Name: "regexall", Impl: ctystdlib.RegexAllFunc},
		{Name: "replace", Impl: replaceFunc},
		{Name: "split", Impl: ctystdlib.SplitFunc},
		{Name: "startswith", Impl: startsWithFunc},
		{Name: "strcontains", Impl: strContainsFunc},
		{Name: "strrev", Impl: ctystdlib.ReverseFunc},
		{Name: "substr", Impl: ctystdlib.SubstrFunc},
		{Name: "title", Impl: ctystdlib.TitleFunc},
		{Name: "trim", Impl: ctystdlib.TrimFunc},
		{Name: "trimprefix", Impl: ctystdlib.TrimPrefixFunc},
		{Name: "trimspace", Impl: ctystdlib.TrimSpaceFunc},
		{Name: "trimsuffix", Impl: ctystdlib.TrimSuffixFunc},
		{Name: "upper", Impl: ctystdlib.UpperFunc},

		// Collections.
		{Name: "alltrue", Impl: allTrueFunc},
		{Name: "anytrue", Impl: anyTrueFunc},
		{Name: "chunklist", Impl: ctystdlib.ChunklistFunc},
		{Name: "coalesce", Impl: ctystdlib.CoalesceFunc},
		{Name: "coalescelist", Impl: ctystdlib.CoalesceListFunc},
		{Name: "compact", Impl: ctystdlib.CompactFunc},
		{Name: "concat", Impl: ctystdlib.ConcatFunc},
		{Name: "contains", Impl: ctystdlib.ContainsFunc},
		{Name: "distinct", Impl: ctystdlib.DistinctFunc},
		{Name: "element", Impl: ctystdlib.ElementFunc},
		{Name: "flatten", Impl: ctystdlib.FlattenFunc},
		{Name: "index", Impl: indexFunc},
		{Name: "keys", Impl: ctystdlib.KeysFunc},
		{Name: "length", Impl: lengthFunc},
		{Name: "lookup", Impl: ctystdlib.LookupFunc},
		{Name: "merge", Impl: ctystdlib.MergeFunc},
		{Name: "one", Impl: oneFunc},
		{Name: "range", Impl: ctystdlib.RangeFunc},
		{Name: "reverse", Impl: ctystdlib.ReverseListFunc},
		{Name: "setintersection", Impl: ctystdlib.SetIntersectionFunc},
		{Name: "setproduct", Impl: ctystdlib.SetProductFunc},
		{Name: "setsubtract", Impl: ctystdlib.SetSubtractFunc},
		{Name: "setunion", Impl: ctystdlib.SetUnionFunc},
		{Name: "slice", Impl: ctystdlib.SliceFunc},
		{Name: "sort", Impl: ctystdlib.SortFunc},
		{Name: "values", Impl: ctystdlib.ValuesFunc},
		{Name: "zipmap", Impl: ctystdlib.ZipmapFunc},

		// Numbers.
		{Name: "abs", Impl: ctystdlib.AbsoluteFunc},
		{Name: "ceil", Impl: ctystdlib.CeilFunc},
		{Name: "floor", Impl: ctystdlib.FloorFunc},
		{Name: "log", Impl: ctystdlib.LogFunc},
		{Name: "max", Impl: ctystdlib.MaxFunc},
		{Name: "min", Impl: ctystdlib.MinFunc},
		{Name: "parseint", Impl: ctystdlib.ParseIntFunc},
		{Name: "pow", Impl: ctystdlib.PowFunc},
		{Name: "signum", Impl: ctystdlib.SignumFunc},
		{Name: "sum", Impl: sumFunc},

		// Encoding and dates.
		{Name: "base64decode", Impl: base64DecodeFunc},
		{Name: "base64encode", Impl: base64EncodeFunc},
		{Name: "csvdecode", Impl: ctystdlib.CSVDecodeFunc},
		{Name: "formatdate", Impl: ctystdlib.FormatDateFunc},
		{Name: "jsondecode", Impl: ctystdlib.JSONDecodeFunc},
		{Name: "jsonencode", Impl: ctystdlib.JSONEncodeFunc},
		{Name: "timeadd", Impl: ctystdlib.TimeAddFunc},
		{Name: "urlencode", Impl: urlEncodeFunc},

		// Type conversion.
		{Name: "tobool", Impl: toboolFunc,
			Description: "Converts the value to a bool; fails when no conversion exists."},
		{Name: "tolist", Impl: tolistFunc,
			Description: "Converts the value to a list; fails when no conversion exists."},
		{Name: "tomap", Impl: tomapFunc,
			Description: "Converts the value to a map; fails when no conversion exists."},
		{Name: "tonumber", Impl: tonumberFunc,
			Description: "Converts the value to a number; fails when no conversion exists."},
		{Name: "toset", Impl: tosetFunc,
			Description: "Converts the value to a set; fails when no conversion exists."},
		{Name: "tostring", Impl: tostringFunc,
			Description: "Converts the value to a string; fails when no conversion exists."},

		// Error handling: both take expressions, not values.
		{Name: "can", Impl: tryfunc.CanFunc,
			Description: "Evaluates the given expression and returns true if it succeeded without errors, false otherwise."},
		{Name: "try", Impl: tryfunc.TryFunc,
			Description: "Evaluates each expression in turn and returns the result of the first one that succeeds; fails when none does."},

		// symbi's own.
		{Name: "cost", Impl: costFunc},
		{Name: "duration", Impl: durationFunc},
		{Name: "env", Impl: envFunc(opts.LookupEnv)},
		{Name: "file", Impl: fileFunc(opts)},
		{Name: "glob_match", Impl: globMatchFunc},
		{Name: "sha256", Impl: sha256Func},
		{Name: "templatefile", Impl: templateFileFunc(opts, templateFuncs)},
		{Name: "tokens", Impl: tokensFunc},
	}
	return funcs
}

// The conversion functions are built once: function values are immutable, and
// building them per table was a third of the table's cost.
var (
	toboolFunc   = ctystdlib.MakeToFunc(cty.Bool)
	tolistFunc   = ctystdlib.MakeToFunc(cty.List(cty.DynamicPseudoType))
	tomapFunc    = ctystdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType))
	tonumberFunc = ctystdlib.MakeToFunc(cty.Number)
	tosetFunc    = ctystdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType))
	tostringFunc = ctystdlib.MakeToFunc(cty.String)
)
