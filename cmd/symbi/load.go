package main

import (
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/interp"
)

// addVarFlags adds --var and --var-file to a command that compiles a configuration.
func addVarFlags(cmd *cobra.Command) {
	cmd.Flags().StringArray("var", nil, "set a variable: --var name=value (repeatable; strongest source)")
	cmd.Flags().StringArray("var-file", nil, "read variables from an .hcl or .json file (repeatable)")
}

// compileOptions reads --var and --var-file from cmd's flags.
func compileOptions(cmd *cobra.Command, validate bool) (interp.Options, error) {
	opts := interp.Options{Validate: validate, LookupEnv: os.LookupEnv, SymbiVersion: version, NoScope: true}
	if f := cmd.Flags().Lookup("var"); f != nil {
		pairs, _ := cmd.Flags().GetStringArray("var")
		for _, kv := range pairs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return opts, exitWith(exitInvalid, "--var %q: write --var name=value", kv)
			}
			if opts.Vars == nil {
				opts.Vars = map[string]string{}
			}
			opts.Vars[k] = v
		}
	}
	if f := cmd.Flags().Lookup("var-file"); f != nil {
		opts.VarFiles, _ = cmd.Flags().GetStringArray("var-file")
	}
	return opts, nil
}

// loadConfig compiles the configuration at path (the current directory when
// empty) with the command's --var and --var-file, prints every diagnostic to
// stderr with source snippets, and fails with exit code 2 on errors. With
// validate, variables without a value are unknown instead of an error.
func loadConfig(cmd *cobra.Command, path string, validate bool) (*interp.Config, error) {
	cfg, diags, err := compileConfig(cmd, path, validate)
	if err != nil {
		return nil, err
	}
	files := map[string]*hcl.File(nil)
	if cfg != nil {
		files = cfg.Files
	}
	printDiags(cmd.ErrOrStderr(), files, diags)
	if diags.HasErrors() {
		return nil, exitWith(exitInvalid, "")
	}
	return cfg, nil
}

func compileConfig(cmd *cobra.Command, path string, validate bool) (*interp.Config, hcl.Diagnostics, error) {
	if path == "" {
		path = "."
	}
	opts, err := compileOptions(cmd, validate)
	if err != nil {
		return nil, nil, err
	}
	cfg, diags := interp.CompileContext(cmd.Context(), path, opts)
	return cfg, diags, nil
}

// pathArg returns the optional PATH argument.
func pathArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "."
}

// singleDashLongFlags rewrites -json to --json (and -out=x to --out=x) when
// the command being run has a long flag of that name, so the Go-style single
// dash that the documentation uses works with cobra.
func singleDashLongFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) > 1 && cmd.Flags().Lookup(name) != nil {
			out[i] = "-" + a
		}
	}
	return out
}
