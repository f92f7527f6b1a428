package knowledge

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// The relevance of a fact to a query, in [0, 1] (docs/knowledge.md):
//
//	Q = words of the query, T = words of "subject predicate object"
//	    (lower case, runs of letters and digits, stop words dropped)
//	N = facts in the store, df(w) = facts whose words hold w
//	weight(w) = 1 + ln((1 + N) / (1 + df(w)))
//	coverage  = Σ weight(w) over Q ∩ T / Σ weight(w) over Q
//	jaccard   = |Q ∩ T| / |Q ∪ T|
//	score     = confidence × (0.8 × coverage + 0.2 × jaccard)
//
// Coverage dominates because a recall query is short and a fact that holds
// all of its words is what was asked for; weighting it by inverse document
// frequency makes a word that few facts hold (a name, a rare term) count for
// more than one most facts hold, as BM25 and tf-idf do. The weight is the
// smoothed idf of tf-idf rather than BM25's: BM25's tends to 0 for a word
// every fact holds, so in a small store the words it knows would count for
// almost nothing beside a word it does not; here every word weighs at least
// 1. Scores stay on one 0..1 scale whatever the query's length (BM25's sum is
// unbounded), so a relevance_threshold means the same for every query. The
// Jaccard term ranks a focused fact above a long one that mentions the same
// words in passing.

// weighedQuery is a recall query weighed against one store: its words in byte
// order with their weights, so that every sum is taken in the same order and
// a recall is repeatable to the last bit.
type weighedQuery struct {
	words   []string
	weights []float64
	total   float64
}

// weigh weighs the words q in a store of n facts, df[w] of which hold w.
func weigh(q map[string]struct{}, n int, df map[string]int) weighedQuery {
	out := weighedQuery{words: make([]string, 0, len(q))}
	for w := range q {
		out.words = append(out.words, w)
	}
	slices.Sort(out.words)
	out.weights = make([]float64, len(out.words))
	for i, w := range out.words {
		out.weights[i] = 1 + math.Log(float64(1+n)/float64(1+df[w]))
		out.total += out.weights[i]
	}
	return out
}

// relevance scores a fact with the words t, held with confidence (clamped to
// [0, 1]). A query with no words scores 0 against everything.
func (q weighedQuery) relevance(t map[string]struct{}, confidence float64) float64 {
	shared, held := 0, 0.0
	for i, w := range q.words {
		if _, ok := t[w]; ok {
			shared++
			held += q.weights[i]
		}
	}
	if shared == 0 {
		return 0
	}
	union := len(q.words) + len(t) - shared
	coverage := held / q.total
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

// stopWords is a set of words that say how a question is asked, not what
// it is about ("tell me about the Earth" is about the Earth). They are
// dropped from queries and facts alike.
type stopWords map[string]struct{}

func newStopWords(list []string) stopWords {
	s := make(stopWords, len(list))
	for _, w := range list {
		s[w] = struct{}{}
	}
	return s
}

// words splits text into its distinct lower-case words of letters and
// digits, without the stop words.
func (s stopWords) words(text string) map[string]struct{} {
	set := make(map[string]struct{})
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if _, stop := s[w]; !stop {
			set[w] = struct{}{}
		}
	}
	return set
}

// englishStopWords is the built-in list of English stop words, in byte
// order: articles, pronouns, auxiliary verbs, prepositions, conjunctions,
// question words, the words requests are put in ("tell", "please",
// "explain") and the pieces contractions leave ("s" of "Earth's", "t" of
// "don't"). Words that can be what a fact is about ("up", "down", "more",
// "may" the month) are not on it. docs/knowledge.md lists it, and a test
// holds the two together.
func englishStopWords() []string {
	return []string{
		"a", "about", "after", "against", "all", "also", "am", "an", "and", "any", "are", "as", "at",
		"be", "because", "been", "before", "being", "between", "both", "but", "by",
		"can", "could", "d", "describe", "did", "do", "does", "doing", "during",
		"each", "either", "every", "explain", "for", "from", "give", "had", "has", "have", "having",
		"he", "her", "here", "hers", "herself", "him", "himself", "his", "how",
		"i", "if", "in", "into", "is", "it", "its", "itself", "just", "know", "let", "ll",
		"m", "many", "me", "much", "my", "myself", "neither", "no", "nor", "not",
		"of", "on", "onto", "or", "other", "our", "ours", "ourselves",
		"please", "re", "s", "shall", "she", "should", "show", "so", "some", "such",
		"t", "tell", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there",
		"these", "they", "this", "those", "through", "to", "too",
		"us", "ve", "very", "was", "we", "were", "what", "when", "where", "which", "while",
		"who", "whom", "whose", "why", "will", "with", "within", "without", "would",
		"you", "your", "yours", "yourself", "yourselves",
	}
}
