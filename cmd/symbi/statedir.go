package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/plan"
)

// defaultStateDir is where runs, runs show, resume, approve and deny look
// without --state-dir or --config: the state_dir every configuration gets
// unless it sets one.
const defaultStateDir = plan.DefaultStateDir

// stateDirFlags choose the state directory of the commands that read one
// rather than run a configuration: --state-dir names it; --config names the
// configuration (or saved plan) whose state_dir it is; without either it is
// ./.symbi.
type stateDirFlags struct {
	dir    string
	config string
}

// add declares --state-dir, --config (-c), and the --var and --var-file that
// compiling the configuration may need; persistent flags are inherited by
// subcommands (runs show).
func (f *stateDirFlags) add(cmd *cobra.Command, persistent bool) {
	flags := cmd.Flags()
	if persistent {
		flags = cmd.PersistentFlags()
	}
	flags.StringVar(&f.dir, "state-dir", "", "the state directory (default: the state_dir of --config, else ./"+defaultStateDir+")")
	flags.StringVarP(&f.config, "config", "c", "", "use the state_dir of this configuration: a .hcl file, a directory, or a saved plan")
	flags.StringArray("var", nil, "set a variable of --config: --var name=value (repeatable)")
	flags.StringArray("var-file", nil, "read variables of --config from an .hcl or .json file (repeatable)")
}

// resolve returns the state directory. --state-dir wins over --config; a
// configuration that does not compile is an error with its diagnostics, as
// for symbi run. Without either flag, ./.symbi must exist: a command run
// from the wrong directory says where it looked instead of finding nothing.
func (f *stateDirFlags) resolve(cmd *cobra.Command) (string, error) {
	switch {
	case f.dir != "":
		return f.dir, nil
	case f.config != "":
		p, baseDir, err := loadRunnable(cmd, f.config)
		if err != nil {
			return "", err
		}
		return engine.DefaultStateDir(p, baseDir), nil
	}
	st, err := os.Stat(defaultStateDir)
	if err == nil && st.IsDir() {
		return defaultStateDir, nil
	}
	where, _ := filepath.Abs(defaultStateDir)
	switch {
	case err == nil:
		return "", exitWith(exitInvalid, "%s is not a directory; give --state-dir DIR, or --config PATH to use a configuration's state_dir", where)
	case !os.IsNotExist(err):
		return "", exitWith(exitFailure, "%v", err)
	}
	return "", exitWith(exitInvalid, "no state directory: looked for %s; run from the directory that holds it, give --state-dir DIR, or --config PATH to use that configuration's state_dir", where)
}
