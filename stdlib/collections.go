package stdlib

import (
	"encoding/base64"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	ctystdlib "github.com/zclconf/go-cty/cty/function/stdlib"
)

// The functions in this file keep Terraform's meaning where go-cty's
// function of the same name means something else (index, length, replace,
// reverse) or where go-cty has none.

// indexFunc is Terraform's index(list, value): the position of value. go-cty's
// IndexFunc is the [] operator, which configuration authors already have.
var indexFunc = function.New(&function.Spec{
	Description: "Returns the index of the first element of the list or tuple that equals the given value; fails when there is none.",
	Params: []function.Parameter{
		{Name: "list", Type: cty.DynamicPseudoType},
		{Name: "value", Type: cty.DynamicPseudoType},
	},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		if !(ty.IsListType() || ty.IsTupleType()) {
			return cty.NilType, function.NewArgErrorf(0, "argument must be a list or tuple, not %s", ty.FriendlyName())
		}
		return cty.Number, nil
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if !args[0].IsWhollyKnown() || !args[1].IsWhollyKnown() {
			return cty.UnknownVal(cty.Number), nil
		}
		if args[0].LengthInt() == 0 {
			return cty.NilVal, function.NewArgErrorf(0, "cannot search an empty list")
		}
		for it := args[0].ElementIterator(); it.Next(); {
			i, v := it.Element()
			if v.Type().Equals(args[1].Type()) && v.Equals(args[1]).True() {
				return i, nil
			}
		}
		return cty.NilVal, function.NewArgErrorf(1, "value not found in the list")
	},
})

// lengthFunc counts characters of a string, like Terraform, as well as the
// elements of a collection, so that length(var.name) works on either.
var lengthFunc = function.New(&function.Spec{
	Description: "Returns the number of characters in a string, or of elements in a list, tuple, set, map or object.",
	Params: []function.Parameter{
		{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true},
	},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		switch {
		case ty == cty.String, ty == cty.DynamicPseudoType,
			ty.IsListType(), ty.IsTupleType(), ty.IsSetType(), ty.IsMapType(), ty.IsObjectType():
			return cty.Number, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "argument must be a string or a collection, not %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		if v.IsNull() {
			return cty.NilVal, function.NewArgErrorf(0, "argument must not be null")
		}
		ty := v.Type()
		switch {
		case ty == cty.String:
			if !v.IsKnown() {
				return cty.UnknownVal(cty.Number), nil
			}
			return ctystdlib.Strlen(v)
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
		case ty == cty.DynamicPseudoType:
			return cty.UnknownVal(cty.Number), nil
		}
		return v.Length(), nil
	},
})

// replaceFunc is Terraform's replace: a substring wrapped in slashes is a
// regular expression, and the replacement may then use $1 and ${name}.
var replaceFunc = function.New(&function.Spec{
	Description: "Replaces every occurrence of substr in str with replace. When substr is wrapped in slashes (\"/[0-9]+/\") it is a regular expression and replace may refer to its groups as $1 or ${name}.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "substr", Type: cty.String},
		{Name: "replace", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sub := args[1].AsString()
		if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
			return ctystdlib.RegexReplace(args[0], cty.StringVal(sub[1:len(sub)-1]), args[2])
		}
		return ctystdlib.Replace(args[0], args[1], args[2])
	},
})

var startsWithFunc = function.New(&function.Spec{
	Description: "Reports whether the string begins with the given prefix.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "prefix", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.BoolVal(strings.HasPrefix(args[0].AsString(), args[1].AsString())), nil
	},
})

var endsWithFunc = function.New(&function.Spec{
	Description: "Reports whether the string ends with the given suffix.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "suffix", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.BoolVal(strings.HasSuffix(args[0].AsString(), args[1].AsString())), nil
	},
})

var base64EncodeFunc = function.New(&function.Spec{
	Description: "Encodes the UTF-8 bytes of the string as standard Base64 with padding.",
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Description: "Decodes standard Base64 with padding; the decoded bytes must be UTF-8 text.",
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgErrorf(0, "not valid Base64: %s", err)
		}
		if !utf8.Valid(b) {
			return cty.NilVal, function.NewArgErrorf(0, "the decoded bytes are not UTF-8 text")
		}
		return cty.StringVal(string(b)), nil
	},
})

var strContainsFunc = function.New(&function.Spec{
	Description: "Reports whether the string contains the given substring.",
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "substr", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.BoolVal(strings.Contains(args[0].AsString(), args[1].AsString())), nil
	},
})

var urlEncodeFunc = function.New(&function.Spec{
	Description: "Escapes the string for use in a URL query: spaces become +, and every byte other than letters, digits and -_.~ becomes %XX.",
	Params:      []function.Parameter{{Name: "str", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(url.QueryEscape(args[0].AsString())), nil
	},
})

var sumFunc = function.New(&function.Spec{
	Description: "Returns the sum of a non-empty list, set or tuple of numbers.",
	Params:      []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type:        function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		list := args[0]
		ty := list.Type()
		if !(ty.IsListType() || ty.IsSetType() || ty.IsTupleType()) {
			return cty.NilVal, function.NewArgErrorf(0, "argument must be a list, set or tuple of numbers, not %s", ty.FriendlyName())
		}
		if !list.IsWhollyKnown() {
			return cty.UnknownVal(cty.Number), nil
		}
		if list.LengthInt() == 0 {
			return cty.NilVal, function.NewArgErrorf(0, "cannot sum an empty list")
		}
		total := cty.Zero
		for it := list.ElementIterator(); it.Next(); {
			i, v := it.Element()
			n, err := convert.Convert(v, cty.Number)
			if err != nil || n.IsNull() {
				return cty.NilVal, function.NewArgErrorf(0, "element %s is not a number", i.GoString())
			}
			total = total.Add(n)
		}
		return total, nil
	},
})

// boolFold is alltrue and anytrue: both read a list of bools, and differ in
// the value that decides early.
func boolFold(description string, decisive bool) function.Function {
	return function.New(&function.Spec{
		Description: description,
		Params:      []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:        function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if !args[0].IsWhollyKnown() {
				return cty.UnknownVal(cty.Bool), nil
			}
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				if v.IsNull() {
					return cty.NilVal, function.NewArgErrorf(0, "list contains null")
				}
				if v.True() == decisive {
					return cty.BoolVal(decisive), nil
				}
			}
			return cty.BoolVal(!decisive), nil
		},
	})
}

var (
	allTrueFunc = boolFold("Returns true when every element of the list is true, or the list is empty.", false)
	anyTrueFunc = boolFold("Returns true when at least one element of the list is true; false for an empty list.", true)
)

var oneFunc = function.New(&function.Spec{
	Description: "Returns the only element of a list, set or tuple with one element, null when it has none, and fails when it has more.",
	Params:      []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		switch {
		case ty.IsListType(), ty.IsSetType():
			return ty.ElementType(), nil
		case ty.IsTupleType():
			switch elems := ty.TupleElementTypes(); len(elems) {
			case 0:
				return cty.DynamicPseudoType, nil
			case 1:
				return elems[0], nil
			}
			return cty.NilType, function.NewArgErrorf(0, "must have at most one element, not %d", len(ty.TupleElementTypes()))
		}
		return cty.NilType, function.NewArgErrorf(0, "argument must be a list, set or tuple, not %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		list := args[0]
		if !list.IsKnown() {
			return cty.UnknownVal(retType), nil
		}
		switch n := list.LengthInt(); n {
		case 0:
			return cty.NullVal(retType), nil
		case 1:
			it := list.ElementIterator()
			it.Next()
			_, v := it.Element()
			return v, nil
		default:
			return cty.NilVal, function.NewArgErrorf(0, "must have at most one element, not %d", n)
		}
	},
})
