// Command depcheck imports every third-party package symbi is built on, so
// `go mod tidy` keeps them while the packages that use them are written.
// It is removed once every dependency has a real importer.
package main

import (
	_ "github.com/agext/levenshtein"
	_ "github.com/cedar-policy/cedar-go"
	_ "github.com/chzyer/readline"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/hashicorp/hcl/v2/ext/tryfunc"
	_ "github.com/hashicorp/hcl/v2/ext/typeexpr"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/hcl/v2/hclwrite"
	_ "github.com/mattn/go-isatty"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/open-policy-agent/opa/v1/tester"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/rogpeppe/go-internal/txtar"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/zclconf/go-cty/cty/function/stdlib"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/term"
	_ "golang.org/x/tools/txtar"
)

func main() {}
