package knowledge

import (
	"strings"
	"unicode"
)

// relevance scores how well a text with the words t answers a query with the
// words q, in [0, 1], weighted by the confidence the text is held with:
//
//	Q = words of query, T = words of text (lower case, letters and digits, stop words dropped)
//	coverage = |Q ∩ T| / |Q|
//	jaccard  = |Q ∩ T| / |Q ∪ T|
//	score    = confidence × (0.8 × coverage + 0.2 × jaccard)
//
// Coverage dominates because a recall query is short and a fact that holds
// all of its words is what was asked for; the Jaccard term ranks a focused
// fact above a long one that mentions the same words in passing. A query with
// no words scores 0 against everything. Confidence is clamped to [0, 1].
func relevance(q, t map[string]struct{}, confidence float64) float64 {
	if len(q) == 0 {
		return 0
	}
	shared := 0
	for w := range q {
		if _, ok := t[w]; ok {
			shared++
		}
	}
	if shared == 0 {
		return 0
	}
	union := len(q) + len(t) - shared
	coverage := float64(shared) / float64(len(q))
	jaccard := float64(shared) / float64(union)
	return clamp01(confidence) * (0.8*coverage + 0.2*jaccard)
}

func clamp01(x float64) float64 {
	switch {
	case !(x > 0): // also NaN
		return 0
	case x > 1:
		return 1
	}
	return x
}

// words splits s into its distinct lower-case words of letters and digits,
// dropping the English function words that would make every fact match.
func words(s string) map[string]struct{} {
	set := make(map[string]struct{})
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !isStopWord(w) {
			set[w] = struct{}{}
		}
	}
	return set
}

func isStopWord(w string) bool {
	switch w {
	case "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "has", "have",
		"how", "in", "is", "it", "its", "of", "on", "or", "that", "the", "to", "was", "were", "what",
		"when", "where", "which", "who", "why", "with":
		return true
	}
	return false
}
