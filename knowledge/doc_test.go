package knowledge

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStopWordsDocumented holds docs/knowledge.md's list of stop words to
// the one recall uses, and the list to its promises: sorted, no word twice,
// and the words of "Tell me about the Earth" that are not what it is about.
func TestStopWordsDocumented(t *testing.T) {
	list := englishStopWords()
	if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
		t.Errorf("the stop words are not sorted and distinct: %v", list)
	}
	for _, w := range []string{"tell", "me", "about", "the", "what", "is", "s"} {
		if !slices.Contains(list, w) {
			t.Errorf("%q is not a stop word", w)
		}
	}
	for _, w := range []string{"earth", "moon", "up", "down", "may", "more", "1"} {
		if slices.Contains(list, w) {
			t.Errorf("%q is a stop word, but a fact can be about it", w)
		}
	}
	doc, err := os.ReadFile("../docs/knowledge.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- stop words: knowledge.englishStopWords -->\n```text\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/knowledge.md has no stop word list")
	}
	if diff := cmp.Diff(list, strings.Fields(string(m[1]))); diff != "" {
		t.Errorf("docs/knowledge.md's stop words differ from englishStopWords() (-code +docs):\n%s", diff)
	}
}
