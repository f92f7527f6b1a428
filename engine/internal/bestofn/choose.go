package bestofn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/budget"
)

// Choice is what a command selector chose: the index of an eligible
// candidate and, when it said, why.
type Choice struct {
	Index  int
	Reason string
}

// MaxChoiceBytes is the most a command selector may print: an index, or a
// small object with a reason. Anything longer is not a choice.
const MaxChoiceBytes = 4096

// maxReasonBytes bounds the reason kept from a selector's output.
const maxReasonBytes = 1024

// ErrBadChoice is wrapped by ParseChoice's errors: the selector's output is
// not the index of an eligible candidate.
var ErrBadChoice = errors.New("the command selector's output is not a choice")

// SelectorCandidate is one eligible candidate as a command selector reads
// it.
type SelectorCandidate struct {
	Index       int           `json:"index"`
	Content     string        `json:"content"`
	Score       float64       `json:"score"`
	Rationale   string        `json:"rationale,omitempty"`
	Key         string        `json:"key,omitempty"`
	Usage       budget.Amount `json:"usage"`
	ScorerUsage budget.Amount `json:"scorer_usage"`
	Elapsed     float64       `json:"elapsed"` // seconds
}

// SelectorInput is the JSON a command selector reads on stdin:
// {"best_of_n", "task", "candidates": [{index, content, score, rationale,
// key, usage, scorer_usage, elapsed}]}, the eligible candidates in index
// order. It also returns their indexes, the only valid choices.
func SelectorInput(addr, task string, cs []Candidate) (json.RawMessage, []int, error) {
	in := struct {
		BestOfN    string              `json:"best_of_n"`
		Task       string              `json:"task"`
		Candidates []SelectorCandidate `json:"candidates"`
	}{BestOfN: addr, Task: task, Candidates: []SelectorCandidate{}}
	var eligible []int
	for _, c := range cs {
		if c.Status != Eligible {
			continue
		}
		eligible = append(eligible, c.Index)
		in.Candidates = append(in.Candidates, SelectorCandidate{
			Index: c.Index, Content: c.Content, Score: c.Score, Rationale: c.Rationale, Key: c.Key,
			Usage: c.Usage, ScorerUsage: c.ScorerUsage, Elapsed: c.Elapsed.Seconds(),
		})
	}
	b, err := json.Marshal(in)
	return b, eligible, err
}

// wholeNumber reports whether s is a JSON integer as a selector writes an
// index: 0, or digits not starting with 0 after an optional minus; no
// plus, fraction or exponent. (A function, not a regexp compiled when the
// binary starts.)
func wholeNumber(s string) bool {
	if s == "0" {
		return true
	}
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseChoice reads a command selector's output, which is hostile input:
// after surrounding white space, exactly a JSON integer ("1") or an object
// {"index": 1, "reason": "..."} with no other field, and nothing after it.
// The index must be one of eligible. At most MaxChoiceBytes are read; the
// reason is kept up to 1 KiB, cut at a character boundary. Every error
// wraps ErrBadChoice and says what was wrong, never quoting more than a
// little of the output.
func ParseChoice(out string, eligible []int) (Choice, error) {
	if len(out) > MaxChoiceBytes {
		return Choice{}, fmt.Errorf("%w: it printed more than %d bytes", ErrBadChoice, MaxChoiceBytes)
	}
	if !utf8.ValidString(out) {
		return Choice{}, fmt.Errorf("%w: it is not UTF-8", ErrBadChoice)
	}
	s := strings.TrimSpace(out)
	if s == "" {
		return Choice{}, fmt.Errorf("%w: it printed nothing (want an index such as 0, or {\"index\": 0})", ErrBadChoice)
	}
	var ch Choice
	var num string
	if s[0] == '{' {
		var obj struct {
			Index  json.RawMessage `json:"index"`
			Reason *string         `json:"reason"`
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&obj); err != nil {
			return Choice{}, fmt.Errorf("%w: %v", ErrBadChoice, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return Choice{}, fmt.Errorf("%w: something follows the object", ErrBadChoice)
		}
		if obj.Index == nil {
			return Choice{}, fmt.Errorf("%w: the object has no index", ErrBadChoice)
		}
		num = string(obj.Index) // a string, a list, null: not a whole number below
		if obj.Reason != nil {
			ch.Reason = cut(*obj.Reason, maxReasonBytes)
		}
	} else {
		num = s
	}
	if !wholeNumber(num) {
		return Choice{}, fmt.Errorf("%w: %s is not a whole number (want an index such as 0, or {\"index\": 0})", ErrBadChoice, quoteShort(num))
	}
	i, err := strconv.Atoi(num)
	if err != nil || !slices.Contains(eligible, i) {
		return Choice{}, fmt.Errorf("%w: %s is not the index of an eligible candidate (%s)", ErrBadChoice, quoteShort(num), indexes(eligible))
	}
	ch.Index = i
	return ch, nil
}

func indexes(is []int) string {
	if len(is) == 0 {
		return "none is eligible"
	}
	parts := make([]string, len(is))
	for i, v := range is {
		parts[i] = strconv.Itoa(v)
	}
	return "eligible: " + strings.Join(parts, ", ")
}

// cut shortens s to at most n bytes at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// quoteShort quotes at most the first 40 bytes of s.
func quoteShort(s string) string {
	const most = 40
	if len(s) > most {
		return strconv.Quote(cut(s, most)) + "…"
	}
	return strconv.Quote(s)
}
