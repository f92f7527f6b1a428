package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine/internal/answer"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/provider"
)

// knowledgeMarker starts the message that carries recalled facts, so the
// next injection replaces it instead of piling up.
const knowledgeMarker = "[knowledge] "

// ErrNoKnowledgeStore is returned when an agent names a knowledge store the
// engine cannot open for it.
var ErrNoKnowledgeStore = errors.New("knowledge store not available")

// knowledgeStore returns the shared store of the agent's knowledge block,
// or nil when the agent has none.
func (r *run) knowledgeStore() (builtins.KnowledgeStore, error) {
	k := r.agent.Knowledge
	if k == nil || k.Store == "" {
		return nil, nil
	}
	return r.e.knowledgeStore(k.Store)
}

// partOfOwnRun reports whether this run works for a larger run of the same
// agent (a plan_execute step): that run pre-hydrates the task and persists
// the final answer, so its parts do neither again.
func (r *run) partOfOwnRun() bool {
	return containsString(r.ro.Ancestors, r.agent.Address)
}

// injectKnowledge recalls the facts relevant to the task and the latest
// observation before a reasoning step and puts them in one system message
// after the system prompt, replacing the previous step's. No relevant fact
// removes the message.
func (r *run) injectKnowledge(ctx context.Context) error {
	k := r.agent.Knowledge
	if k == nil || k.Store == "" {
		return nil
	}
	store, err := r.knowledgeStore()
	if err != nil {
		return err
	}
	query := knowledgeQuery(r.input, r.conv)
	facts, err := store.Recall(ctx, query, k.MaxContextItems, k.RelevanceThreshold)
	if err != nil {
		return fmt.Errorf("%s: recall: %w", k.Store, err)
	}
	r.conv = withKnowledge(r.conv, formatFacts(facts))
	if len(facts) == 0 {
		return nil
	}
	data := journal.KnowledgeInjectedData{Store: k.Store, Query: query, Facts: make([]string, len(facts))}
	for i, f := range facts {
		data.Facts[i] = f.Text()
	}
	return r.record(journal.KnowledgeInjected, data)
}

// persistKnowledge stores a completed run's answer as a fact when the agent
// asks for it (auto_persist): the task as subject, "was answered with" as
// predicate, the answer as object. A run that persists nothing (a best-of-N
// candidate) writes no knowledge either.
func (r *run) persistKnowledge(ctx context.Context) error {
	k := r.agent.Knowledge
	if k == nil || k.Store == "" || !k.AutoPersist || r.ro.NoJournal || r.partOfOwnRun() || strings.TrimSpace(r.answer) == "" {
		return nil
	}
	store, err := r.knowledgeStore()
	if err != nil {
		return err
	}
	// The store is a file that outlives the run: the input may quote a
	// secret.
	red := &r.e.secrets
	f := knowledge.Fact{
		Subject:    answer.Clip(strings.TrimSpace(red.Text(r.input)), 500),
		Predicate:  "was answered with",
		Object:     answer.Clip(strings.TrimSpace(red.Text(r.answer)), 4000),
		Confidence: autoPersistConfidence,
		Source:     r.agent.Address + " run " + r.id,
	}
	if err := store.Put(ctx, f); err != nil {
		return fmt.Errorf("%s: persist: %w", k.Store, err)
	}
	return nil
}

// autoPersistConfidence is what an answer stored by auto_persist is
// believed with: a model's answer is a claim, not a verified fact, so it
// ranks below facts a person or a tool stored with certainty.
const autoPersistConfidence = 0.6

// knowledgeQuery is what recall searches for: the task, plus the latest
// tool observation when there is one (it says what the step is about).
func knowledgeQuery(input string, conv []provider.Message) string {
	q := input
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == provider.ToolRole {
			q += "\n" + answer.Clip(conv[i].Content, 1000)
			break
		}
		if conv[i].Role == provider.User {
			break
		}
	}
	return q
}

func formatFacts(facts []knowledge.Scored) string {
	if len(facts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(knowledgeMarker)
	b.WriteString("Facts from the knowledge store that may be relevant (confidence in brackets):\n")
	for _, f := range facts {
		fmt.Fprintf(&b, "- %s [%.2f]\n", f.Text(), f.Confidence)
	}
	return strings.TrimRight(b.String(), "\n")
}

// withKnowledge replaces the previous knowledge message with text (or
// removes it when text is empty). A new one goes after the leading system
// messages, where context fitting always keeps it.
func withKnowledge(conv []provider.Message, text string) []provider.Message {
	out := make([]provider.Message, 0, len(conv)+1)
	for _, m := range conv {
		if m.Role == provider.System && strings.HasPrefix(m.Content, knowledgeMarker) {
			continue
		}
		out = append(out, m)
	}
	if text == "" {
		return out
	}
	at := 0
	for at < len(out) && out[at].Role == provider.System {
		at++
	}
	msg := provider.Message{Role: provider.System, Content: text}
	return append(out[:at], append([]provider.Message{msg}, out[at:]...)...)
}
