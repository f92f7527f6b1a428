package policy

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The question an approver at a terminal asks, and its answers.
const (
	// Question ends a prompt: "y" approves; anything else denies, the
	// rest of the line being the reason. For a tool call, Choices comes
	// before it: "e" edits the arguments and approves them, "r" approves
	// and remembers a rule for the run.
	Question = "Approve? [y/N] "
	Choices  = "  y approve · n deny · e edit the arguments · r approve and remember\n"
	// maxTries bounds the attempts at an edit or a rule that does not
	// parse, so a person who gives up does not keep the run waiting.
	maxTries = 3
)

// ErrAnswer is the end of a conversation without an answer: the terminal
// closed, or nobody answered in time (the caller's next says which).
var ErrAnswer = errors.New("no answer")

// Converse asks a person about req at a terminal, after the caller has
// shown Prompt(req.Prepared()): next shows a prompt and returns the line
// typed (its errors end the conversation and are returned, for the caller
// to turn into a timeout or a denial). rec is the record to fill (ID, By,
// Via); now stamps it. The answers:
//
//   - "y" or "yes" approves the action as it is;
//   - "e" or "edit" (a tool call's) asks for the arguments as one line of
//     JSON, shows them as the prompt shows arguments, with their digest,
//     and asks to confirm: the approval carries them (ApprovalRecord.
//     Arguments), and the run checks them and gates them again;
//   - "r" or "remember" (a tool call's) shows the rule that would approve
//     this call and later ones like it for the rest of the run (every
//     argument exactly as it is), lets the person widen arguments to globs
//     ("path=notes/*") and give an end ("for 1h"), shows the rule again and
//     asks to confirm: the approval carries it (ApprovalRecord.Remember);
//   - anything else denies; the words after the first are the reason.
func Converse(out io.Writer, req Request, next func(prompt string) (string, error), rec ApprovalRecord, now func() time.Time) (ApprovalRecord, error) {
	if req.Action.Type == ToolCall {
		fmt.Fprint(out, Choices)
	}
	line, err := next(Question)
	if err != nil {
		return rec, err
	}
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	rec.At = now()
	switch strings.ToLower(word) {
	case "y", "yes":
		rec.Approved, rec.Reason = true, rest
		return rec, nil
	case "e", "edit":
		if req.Action.Type != ToolCall {
			return deny(rec, now, "only a tool call's arguments can be edited; not approved"), nil
		}
		return editArguments(out, req, next, rec, now)
	case "r", "remember":
		if req.Action.Type != ToolCall {
			return deny(rec, now, "only a tool call can be remembered; not approved"), nil
		}
		return rememberRule(out, req, next, rec, now)
	}
	rec.Reason = rest
	if rec.Reason == "" {
		rec.Reason = "denied at the terminal by " + rec.By
	}
	return rec, nil
}

func deny(rec ApprovalRecord, now func() time.Time, reason string) ApprovalRecord {
	rec.Approved, rec.Reason, rec.At = false, reason, now()
	return rec
}

func yes(line string) bool {
	ok, _ := ParseAnswer(line)
	return ok
}

func editArguments(out io.Writer, req Request, next func(string) (string, error), rec ApprovalRecord, now func() time.Time) (ApprovalRecord, error) {
	for try := 0; try < maxTries; try++ {
		line, err := next("  the arguments, as one line of JSON: ")
		if err != nil {
			return rec, err
		}
		obj, err := argumentsObject([]byte(strings.TrimSpace(line)))
		if err == nil && strings.TrimSpace(line) == "" {
			err = errors.New("empty")
		}
		if err != nil {
			fmt.Fprintf(out, "  not a JSON object (%s); try again\n", EscapeLine(err.Error()))
			continue
		}
		args, err := marshalCanonical(obj)
		if err != nil {
			return rec, err
		}
		shown := args
		if req.Redact != nil {
			shown = req.Redact(args)
		}
		fmt.Fprintf(out, "  edited arguments:\n%s  digest %s\n", RenderArguments(shown, "    ", PromptWidth, PromptArgumentLines), digestJSON(args))
		confirm, err := next("  Run with these arguments? [y/N] ")
		if err != nil {
			return rec, err
		}
		if !yes(confirm) {
			return deny(rec, now, "the edited arguments were not confirmed; not approved"), nil
		}
		rec.Approved, rec.Arguments, rec.At = true, args, now()
		rec.Reason = "approved with edited arguments by " + rec.By
		return rec, nil
	}
	return deny(rec, now, fmt.Sprintf("no valid arguments in %d tries; not approved", maxTries)), nil
}

func rememberRule(out io.Writer, req Request, next func(string) (string, error), rec ApprovalRecord, now func() time.Time) (ApprovalRecord, error) {
	exact, err := NewStanding(req.Action, nil, time.Time{})
	if err != nil {
		return deny(rec, now, err.Error()), nil
	}
	fmt.Fprintf(out, "  remember: %s\n", exact.Redacted(req.Redact))
	for try := 0; try < maxTries; try++ {
		line, err := next("  widen arguments (name=glob ...) and end (for 1h), or empty to keep it as shown: ")
		if err != nil {
			return rec, err
		}
		widen, until, err := parseRemember(line, now())
		var s Standing
		if err == nil {
			s, err = NewStanding(req.Action, widen, until)
		}
		if err != nil {
			fmt.Fprintf(out, "  %s; try again\n", EscapeLine(err.Error()))
			continue
		}
		fmt.Fprintf(out, "  the rule: %s\n", s.Redacted(req.Redact))
		confirm, err := next("  Approve this call and remember the rule? [y/N] ")
		if err != nil {
			return rec, err
		}
		if !yes(confirm) {
			return deny(rec, now, "the rule to remember was not confirmed; not approved"), nil
		}
		rec.Approved, rec.At = true, now()
		rec.Remember = &Remember{Widen: widen, Until: until}
		rec.Reason = "approved and remembered by " + rec.By + ": " + s.Redacted(req.Redact).String()
		return rec, nil
	}
	return deny(rec, now, fmt.Sprintf("no valid rule in %d tries; not approved", maxTries)), nil
}

// parseRemember reads "name=glob ... [for DURATION]".
func parseRemember(line string, now time.Time) ([]string, time.Time, error) {
	fields := strings.Fields(line)
	var widen []string
	var until time.Time
	for i := 0; i < len(fields); i++ {
		if fields[i] == "for" {
			if i+1 >= len(fields) {
				return nil, time.Time{}, errors.New(`"for" needs a duration, such as 30m or 2h`)
			}
			d, err := time.ParseDuration(fields[i+1])
			if err != nil || d <= 0 {
				return nil, time.Time{}, fmt.Errorf("%q is not a duration such as 30m or 2h", fields[i+1])
			}
			until = now.Add(d)
			i++
			continue
		}
		widen = append(widen, fields[i])
	}
	return widen, until, nil
}
