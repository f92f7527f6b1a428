package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/internal/hclfmt"
)

func newFmtCmd() *cobra.Command {
	var check, showDiff bool
	cmd := &cobra.Command{
		Use:   "fmt [PATH]",
		Short: "Rewrite configuration files in the canonical format",
		Long: `Fmt rewrites .hcl files in the canonical HCL layout (indentation, aligned
equals signs, spacing), the same layout whatever editor wrote them. It prints
the name of every file it changed.

-check changes nothing and exits 1 when a file would change; -diff prints the
changes as a unified diff. A file that does not parse is reported and left
alone (exit 2).
Exit status: 0 formatted (or nothing to do), 1 -check found changes, 2 invalid.`,
		Example: `  symbi fmt                 # every *.hcl in the current directory
  symbi fmt -check -diff .  # in CI: fail and show what would change`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := fmtTargets(pathArg(args))
			if err != nil {
				return exitWith(exitInvalid, "%v", err)
			}
			changed, invalid := 0, false
			for _, name := range files {
				src, err := os.ReadFile(name)
				if err != nil {
					return exitWith(exitInvalid, "%v", err)
				}
				f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
				if diags.HasErrors() {
					printDiags(cmd.ErrOrStderr(), map[string]*hcl.File{name: f}, diags)
					invalid = true
					continue
				}
				out := hclfmt.Format(src)
				if bytes.Equal(out, src) {
					continue
				}
				changed++
				fmt.Fprintln(cmd.OutOrStdout(), name)
				if showDiff {
					cmd.OutOrStdout().Write(diff.Diff(name, src, name+" (formatted)", out))
				}
				if !check {
					info, err := os.Stat(name)
					if err != nil {
						return exitWith(exitFailure, "%v", err)
					}
					if err := os.WriteFile(name, out, info.Mode().Perm()); err != nil {
						return exitWith(exitFailure, "%v", err)
					}
				}
			}
			switch {
			case invalid:
				return exitWith(exitInvalid, "")
			case check && changed > 0:
				return exitWith(exitChanged, "")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "change nothing; exit 1 if any file is not formatted")
	cmd.Flags().BoolVar(&showDiff, "diff", false, "print the changes as a unified diff")
	return cmd
}

func fmtTargets(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.hcl"))
	sort.Strings(files)
	return files, err
}
