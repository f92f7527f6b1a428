package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/lockfile"
	"github.com/symbi-dev/symbi/plan"
)

func newLockCmd() *cobra.Command {
	var update, check bool
	cmd := &cobra.Command{
		Use:   "lock [PATH]",
		Short: "Pin what the MCP servers and command tools are, in symbi.lock.hcl",
		Long: `Lock starts every MCP server of the configuration, lists its tools, resolves
every command tool's executable, and writes the lock file beside the
configuration: symbi.lock.hcl in a directory, NAME.lock.hcl beside a single
file NAME.hcl. Commit it and review changes to it like code.

Per server it pins the launch (the command as written, the executable it
resolves to and its sha256, and for npx, uvx and similar launchers the package
and version; a launch without an exact version is a warning with the fix), the
protocol version and the server's name and version; per tool the digest of its
canonical definition (name, title, description, input and output schema,
annotations) and the definition itself, as indented JSON.

Every run checks its servers and tools against the lock file: a tool whose
definition changed, a tool that appeared, or a server launched differently is
drift, which the run refuses by default (see on_drift in docs/tools.md).

Without a lock file, lock writes one. With one, lock shows what differs and
changes nothing; -update shows the same diff and writes what runs now; -check
exits 1 when anything differs (for CI) and writes nothing.
Exit status: 0 written or up to date, 1 -check found changes (or they need
-update), 2 invalid configuration or usage, 4 a server that cannot start.`,
		Example: `  symbi lock                          # write symbi.lock.hcl for the current directory
  symbi lock examples/tools-mcp.hcl   # writes examples/tools-mcp.lock.hcl
  symbi lock -update                  # accept what the servers offer now, after the diff
  symbi lock -check                   # in CI: fail when the lock file is out of date`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if update && check {
				return exitWith(exitInvalid, "-update writes the lock file and -check never does: give one of them")
			}
			cfg, err := loadConfig(cmd, pathArg(args), false)
			if err != nil {
				return err
			}
			now, warnings, err := pinned(cmd, cfg)
			if err != nil {
				return err
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			for _, w := range warnings {
				fmt.Fprintf(errw, "Warning: %s\n", w)
			}
			name := cfg.LockFile
			old := cfg.Plan.Lock
			changes := lockfile.Diff(old, now)
			switch {
			case old == nil && check:
				fmt.Fprintf(out, "%s does not exist: the tools are not pinned; run symbi lock to write it\n", name)
				return exitWith(exitChanged, "")
			case old == nil:
				if err := writeLock(name, now); err != nil {
					return exitWith(exitFailure, "%v", err)
				}
				fmt.Fprintf(out, "wrote %s: %s\n", name, lockCounts(now))
				return nil
			case len(changes) == 0:
				fmt.Fprintf(out, "%s is up to date: %s\n", name, lockCounts(now))
				return nil
			}
			fmt.Fprintf(out, "%s differs from what the configuration runs now:\n", name)
			io.WriteString(out, indentReport(changes))
			switch {
			case check:
				return exitWith(exitChanged, "%s is out of date (%s); review and run symbi lock -update", name, count(len(changes), "change", "changes"))
			case !update:
				return exitWith(exitChanged, "nothing written: review the changes and run symbi lock -update to accept them")
			}
			if err := writeLock(name, now); err != nil {
				return exitWith(exitFailure, "%v", err)
			}
			fmt.Fprintf(out, "updated %s: %s\n", name, lockCounts(now))
			return nil
		},
	}
	cmd.Flags().BoolVar(&update, "update", false, "accept what the servers and tools are now, after showing the diff")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 1 when the lock file is missing or out of date")
	addVarFlags(cmd)
	return cmd
}

// pinned starts the configuration's servers and resolves its command
// tools: what a lock file written now would pin.
func pinned(cmd *cobra.Command, cfg *interp.Config) (*plan.Lock, []string, error) {
	e, err := engine.New(cfg.Plan, engine.Options{BaseDir: cfg.BaseDir, LookupEnv: os.LookupEnv})
	if err != nil {
		return nil, nil, exitWith(exitInvalid, "%v", err)
	}
	defer e.Close()
	now, warnings, err := e.Pinned(cmd.Context())
	if err != nil {
		return nil, nil, exitWith(exitFailure, "%v", err)
	}
	return now, warnings, nil
}

// indentReport is changes as a diff, each indented under the heading.
func indentReport(changes []lockfile.Change) string {
	var s string
	for _, c := range changes {
		s += "  " + c.Summary() + "\n"
		for _, d := range c.Details {
			s += "      " + d + "\n"
		}
	}
	return s
}

func lockCounts(l *plan.Lock) string {
	tools := 0
	for _, s := range l.Servers {
		tools += len(s.Tools)
	}
	return fmt.Sprintf("%s, %s, %s", count(len(l.Servers), "MCP server", "MCP servers"), count(tools, "tool", "tools"),
		count(len(l.CommandTools), "command tool", "command tools"))
}

// writeLock writes the lock file whole or not at all: to a temporary file
// beside it, then renamed into place.
func writeLock(path string, l *plan.Lock) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".symbi-lock-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(lockfile.Encode(l))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	os.Chmod(tmp.Name(), mode)
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
