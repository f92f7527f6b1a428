package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
)

func newFmtCmd() *cobra.Command {
	var check, diff bool
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
				out := hclwrite.Format(src)
				if bytes.Equal(out, src) {
					continue
				}
				changed++
				fmt.Fprintln(cmd.OutOrStdout(), name)
				if diff {
					writeUnifiedDiff(cmd.OutOrStdout(), name, string(src), string(out))
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
	cmd.Flags().BoolVar(&diff, "diff", false, "print the changes as a unified diff")
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

// writeUnifiedDiff prints a unified diff of two texts with three lines of
// context. The texts are configuration files, so a quadratic longest common
// subsequence is fine.
func writeUnifiedDiff(w io.Writer, name, a, b string) {
	al, bl := splitLines(a), splitLines(b)
	n, m := len(al), len(bl)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int
		bi   int
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			ops = append(ops, op{' ', al[i], i, j})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', bl[j], i, j})
			j++
		default:
			ops = append(ops, op{'-', al[i], i, j})
			i++
		}
	}
	fmt.Fprintf(w, "--- %s\n+++ %s (formatted)\n", name, name)
	const ctx = 3
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-ctx)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*ctx || run == len(ops) {
				end = min(len(ops), end+ctx)
				break
			}
			end = run
		}
		var aCount, bCount int
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aCount++
			}
			if o.kind != '-' {
				bCount++
			}
		}
		fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", ops[start].ai+1, aCount, ops[start].bi+1, bCount)
		for _, o := range ops[start:end] {
			fmt.Fprintf(w, "%c%s\n", o.kind, o.text)
		}
		k = end
	}
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
