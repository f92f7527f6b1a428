package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ergochat/readline"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/repl"
)

func newReplCmd() *cobra.Command {
	var obs observeFlags
	cmd := &cobra.Command{
		Use:   "repl [PATH]",
		Short: "Explore a configuration: evaluate expressions, try gates, call tools, step through runs",
		Long: `repl loads the configuration at PATH (the current directory when it has
.hcl files) and reads expressions and commands: an HCL expression is
evaluated in the configuration's scope (var.x, local.y, agent.NAME.loop.mode,
upper("a")); a line starting with ':' is a command (:help lists them).

On a terminal it has line editing, history in $HOME/.symbi_history (or the
file SYMBI_REPL_HISTORY names; set it empty to keep none), tab completion of
commands, functions and addresses, and multi-line input while brackets are
open. Without a terminal it reads a script from standard input, one input per
line, and prints the results: diagnostics go to standard error and the
session goes on after them. See docs/repl.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runRepl(cmd, args, obs) },
	}
	addVarFlags(cmd)
	obs.add(cmd, true)
	return cmd
}

func runRepl(cmd *cobra.Command, args []string, obsFlags observeFlags) error {
	copts, err := compileOptions(cmd, false)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	in, out, errOut := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	// The session's telemetry is the environment's and the flags': the
	// configurations it loads come and go.
	o, err := observe(ctx, nil, "", obsFlags, errOut)
	if err != nil {
		return err
	}
	defer o.close()
	if o.tel.MetricsURL != "" {
		fmt.Fprintf(errOut, "symbi repl: metrics at %s\n", o.tel.MetricsURL)
	}
	opts := repl.Options{
		Vars:      copts.Vars,
		VarFiles:  copts.VarFiles,
		LookupEnv: os.LookupEnv,
		Engine:    o.apply,
	}

	if isTerminal(in) && isTerminal(out) {
		rl, err := newReadline(in, out, errOut)
		if err != nil {
			return exitWith(exitFailure, "repl: %v", err)
		}
		defer rl.Close()
		input := &lineInput{read: rl.Readline, show: func(prompt string, reading bool) {
			rl.SetPrompt(prompt)
			if reading {
				rl.Refresh()
			}
		}}
		opts.Approver = &lineApprover{out: out, by: os.Getenv("USER"), input: input}
		sess := startSession(opts, args, errOut)
		defer sess.Close()
		if sess.Loaded() != "" {
			fmt.Fprint(errOut, sess.Summary())
		}
		fmt.Fprintln(errOut, "symbi repl: :help for commands, Tab to complete, Ctrl-D to quit.")
		return interactiveLoop(ctx, sess, rl, input, out, errOut)
	}

	// A script: the approver reads its answer from the script's next line.
	lines := newLineSource(in)
	input := &lineInput{read: lines.next, show: func(prompt string, _ bool) { fmt.Fprint(out, prompt) }}
	opts.Approver = &lineApprover{out: out, by: "script", input: input, echo: true}
	sess := startSession(opts, args, errOut)
	defer sess.Close()
	return scriptLoop(ctx, sess, input, out, errOut)
}

// startSession makes the session and loads PATH. A configuration that does
// not load is reported, and the session starts without it: fix the files
// and :reload.
func startSession(opts repl.Options, args []string, errOut io.Writer) *repl.Session {
	sess := repl.New(opts)
	if path, ok := replPath(args); ok {
		diags := sess.Load(path)
		repl.WriteDiagnostics(errOut, sess.Files(), diags)
	}
	return sess
}

// replPath is the configuration to load: PATH, or the current directory
// when it has .hcl files (a REPL started elsewhere starts empty, not with
// an error).
func replPath(args []string) (string, bool) {
	if len(args) > 0 {
		return args[0], true
	}
	matches, _ := filepath.Glob("*.hcl")
	return ".", len(matches) > 0
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// historyFile is $SYMBI_REPL_HISTORY when set (empty: no history), else
// $HOME/.symbi_history: one history for every configuration, like a shell's.
func historyFile() string {
	if p, ok := os.LookupEnv("SYMBI_REPL_HISTORY"); ok {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".symbi_history")
}

func newReadline(in io.Reader, out, errOut io.Writer) (*readline.Instance, error) {
	cfg := &readline.Config{
		Prompt:            "> ",
		HistoryFile:       historyFile(),
		HistorySearchFold: true,
		InterruptPrompt:   "^C",
		EOFPrompt:         ":quit",
		Stdout:            out,
		Stderr:            errOut,
	}
	if in != nil {
		cfg.Stdin = in
	}
	return readline.NewFromConfig(cfg)
}

// completer adapts Session.CompleteAt to readline: candidates are the
// suffixes to add after the word being completed.
type completer struct{ sess *repl.Session }

func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	prefix := string(line[:pos])
	start, words := c.sess.CompleteAt(prefix)
	word := prefix[start:]
	out := make([][]rune, 0, len(words))
	for _, w := range words {
		if strings.HasPrefix(w, word) {
			out = append(out, []rune(w[len(word):]))
		}
	}
	return out, utf8.RuneCountInString(word)
}

// lineEditor is what readInput needs of readline.
type lineEditor interface {
	Readline() (string, error)
	SetPrompt(string)
}

// readInput reads one input: lines until the session no longer NeedsMore.
// Ctrl-C drops what was typed so far.
func readInput(sess *repl.Session, rl lineEditor) (string, error) {
	var buf []string
	rl.SetPrompt(sess.Prompt())
	for {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			buf = nil
			rl.SetPrompt(sess.Prompt())
			continue
		}
		if err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return strings.Join(buf, "\n"), nil
			}
			return "", err
		}
		buf = append(buf, line)
		text := strings.Join(buf, "\n")
		if !sess.NeedsMore(text) {
			return text, nil
		}
		rl.SetPrompt(sess.ContinuationPrompt())
	}
}

func interactiveLoop(ctx context.Context, sess *repl.Session, rl *readline.Instance, input *lineInput, out, errOut io.Writer) error {
	cfg := rl.GetConfig()
	cfg.AutoComplete = completer{sess}
	if err := rl.SetConfig(cfg); err != nil {
		return exitWith(exitFailure, "repl: %v", err)
	}
	for {
		text, err := readInput(sess, &promptedInput{ctx: ctx, in: input})
		if err != nil {
			return nil // Ctrl-D
		}
		// Ctrl-C while an input runs (a :run, say) cancels that input only.
		// So does Ctrl-C typed while an approval prompt that timed out
		// still holds the terminal (lineInput.whileRunning).
		lineCtx, stop := signal.NotifyContext(ctx, os.Interrupt)
		lineCtx, cancel := context.WithCancel(lineCtx)
		input.whileRunning(cancel)
		output, exit, diags := sess.Handle(lineCtx, text)
		input.whileRunning(nil)
		cancel()
		stop()
		fmt.Fprint(out, output)
		repl.WriteDiagnostics(errOut, sess.Files(), diags)
		if exit {
			return nil
		}
	}
}

func scriptLoop(ctx context.Context, sess *repl.Session, input *lineInput, out, errOut io.Writer) error {
	var buf []string
	handle := func(text string) bool {
		output, exit, diags := sess.Handle(ctx, text)
		fmt.Fprint(out, output)
		repl.WriteDiagnostics(errOut, sess.Files(), diags)
		return exit
	}
	for {
		line, err := input.next(ctx, "")
		if err != nil {
			if len(buf) > 0 {
				handle(strings.Join(buf, "\n"))
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return exitWith(exitFailure, "repl: reading the script: %v", err)
		}
		buf = append(buf, line)
		text := strings.Join(buf, "\n")
		if sess.NeedsMore(text) {
			continue
		}
		buf = nil
		if handle(text) {
			return nil
		}
	}
}

// lineSource reads a script's lines; the approver reads its answers from
// the same source, so a script can answer an approval on its next line.
type lineSource struct{ sc *bufio.Scanner }

func newLineSource(r io.Reader) *lineSource {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	return &lineSource{sc: sc}
}

func (l *lineSource) next() (string, error) {
	if l.sc.Scan() {
		return strings.TrimRight(l.sc.Text(), "\r"), nil
	}
	if err := l.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

// Compile-time checks that the adapters fit the interfaces they serve.
var (
	_ readline.AutoCompleter = completer{}
	_ policy.Approver        = (*lineApprover)(nil)
)
