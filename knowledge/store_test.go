package knowledge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// clock is a test clock that advances one second per reading, so every Put
// gets a distinct, predictable time.
func clock() func() time.Time {
	var mu sync.Mutex
	now := t0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := OpenWith(filepath.Join(t.TempDir(), "nested", "dir", "knowledge.db"), Options{Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s *Store, facts ...Fact) {
	t.Helper()
	for _, f := range facts {
		if err := s.Put(context.Background(), f); err != nil {
			t.Fatalf("Put(%v): %v", f, err)
		}
	}
}

func TestPutUpdatesTheSameTriple(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	put(t, s,
		Fact{Subject: "Earth", Predicate: "has", Object: "one moon", Confidence: 0.5, Source: "run-1"},
		Fact{Subject: " earth", Predicate: "HAS", Object: "one  moon ", Confidence: 0.95, Source: "run-2"},
		Fact{Subject: "Mars", Predicate: "has", Object: "two moons", Confidence: 0.9},
	)
	got, err := s.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fact{
		{Subject: " earth", Predicate: "HAS", Object: "one  moon ", Confidence: 0.95, Source: "run-2", CreatedAt: t0.Add(2 * time.Second)},
		{Subject: "Mars", Predicate: "has", Object: "two moons", Confidence: 0.9, CreatedAt: t0.Add(3 * time.Second)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("All() mismatch (-want +got):\n%s", diff)
	}
}

func TestPutRejectsInvalidFacts(t *testing.T) {
	s := openTest(t)
	for _, f := range []Fact{
		{Predicate: "p", Object: "o", Confidence: 1},
		{Subject: "s", Predicate: " ", Object: "o", Confidence: 1},
		{Subject: "s", Predicate: "p", Confidence: 1},
		{Subject: "s", Predicate: "p", Object: "o", Confidence: 1.5},
		{Subject: "s", Predicate: "p", Object: "o", Confidence: -0.1},
	} {
		if err := s.Put(context.Background(), f); !errors.Is(err, ErrInvalidFact) {
			t.Errorf("Put(%+v) = %v, want ErrInvalidFact", f, err)
		}
	}
}

func TestPutKeepsGivenTime(t *testing.T) {
	s := openTest(t)
	at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
	put(t, s, Fact{Subject: "s", Predicate: "p", Object: "o", Confidence: 1, CreatedAt: at})
	got, _ := s.All(context.Background())
	if !got[0].CreatedAt.Equal(at) || got[0].CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt = %v, want %v in UTC", got[0].CreatedAt, at)
	}
}

func TestRecallRanksByRelevanceThenRecency(t *testing.T) {
	s := openTest(t)
	put(t, s,
		Fact{Subject: "Paris", Predicate: "is the capital of", Object: "France", Confidence: 1},
		Fact{Subject: "France", Predicate: "borders", Object: "Spain", Confidence: 1},
		Fact{Subject: "Lyon", Predicate: "is a city in", Object: "France", Confidence: 0.5},
		Fact{Subject: "Berlin", Predicate: "is the capital of", Object: "Germany", Confidence: 1},
		Fact{Subject: "Madrid", Predicate: "is in", Object: "Spain", Confidence: 1},
	)
	got, err := s.Recall(context.Background(), "What is the capital of France?", 3, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, g := range got {
		texts = append(texts, fmt.Sprintf("%s %.4f", g.Text(), g.Score))
	}
	// Query words {capital, france}, weighed in a store of 5 facts: capital is
	// in 2 (weight 1 + ln(6/3) = 1.693), france in 3 (1 + ln(6/4) = 1.405),
	// so capital is 0.546 of the query and france 0.454.
	// Paris fact: words {paris, capital, france}: 0.8*1 + 0.2*2/3.
	// Berlin fact: {berlin, capital, germany}: 0.8*0.546 + 0.2*1/4.
	// France borders Spain: {france, borders, spain}: 0.8*0.454 + 0.2*1/4:
	// below Berlin, because the rarer word counts for more (with every word
	// weighing the same, the two tied at 0.45 and the newer came first).
	// Lyon: {lyon, city, france} at confidence 0.5: 0.5*0.413 = 0.206 < 0.3.
	want := []string{
		"Paris is the capital of France 0.9333",
		"Berlin is the capital of Germany 0.4871",
		"France borders Spain 0.4129",
	}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Fatalf("Recall mismatch (-want +got):\n%s", diff)
	}
}

// TestRecallTellMeAboutTheEarth: a question put the way people put them.
// "tell", "me" and "about" say how it is asked, not what about; counted as
// search words they left the only Earth fact below the threshold.
func TestRecallTellMeAboutTheEarth(t *testing.T) {
	s := openTest(t)
	put(t, s,
		Fact{Subject: "Earth", Predicate: "has", Object: "one moon", Confidence: 0.95},
		Fact{Subject: "Mars", Predicate: "has", Object: "two moons", Confidence: 0.9},
		Fact{Subject: "Jupiter", Predicate: "is", Object: "the largest planet", Confidence: 1},
		Fact{Subject: "Paris", Predicate: "is the capital of", Object: "France", Confidence: 1},
	)
	for _, q := range []string{"Tell me about the Earth", "Please tell me about Earth.", "What do you know about the Earth?", "Explain Earth's"} {
		got, err := s.Recall(context.Background(), q, 5, 0.3)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, g := range got {
			texts = append(texts, fmt.Sprintf("%s %.4f", g.Text(), g.Score))
		}
		// Query words {earth}: 0.95 * (0.8*1 + 0.2*1/3).
		if diff := cmp.Diff([]string{"Earth has one moon 0.8233"}, texts); diff != "" {
			t.Errorf("Recall(%q) mismatch (-want +got):\n%s", q, diff)
		}
	}
}

// TestRecallWeighsRareWordsHigher: of two facts that each hold one word of
// "Go channels", the one holding the word few facts hold ranks first. By
// plain word overlap the Go fact ranked first, being the shorter.
func TestRecallWeighsRareWordsHigher(t *testing.T) {
	s := openTest(t)
	put(t, s,
		Fact{Subject: "Channels", Predicate: "carry", Object: "values", Confidence: 1},
		Fact{Subject: "Go", Predicate: "has", Object: "goroutines", Confidence: 1},
		Fact{Subject: "Go", Predicate: "is", Object: "compiled", Confidence: 1},
		Fact{Subject: "Go", Predicate: "was released in", Object: "2009", Confidence: 1},
		Fact{Subject: "Go", Predicate: "is", Object: "fast", Confidence: 1},
	)
	got, err := s.Recall(context.Background(), "Go channels", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, g := range got {
		texts = append(texts, fmt.Sprintf("%s %.4f", g.Text(), g.Score))
	}
	// channels is in 1 fact of 5 (weight 1 + ln 3 = 2.099), go in 4
	// (1 + ln 1.2 = 1.182): channels is 0.640 of the query, go 0.360.
	// Channels carry values: 0.8*0.640 + 0.2*1/4. Go is fast (the newest of
	// the Go facts with two words): 0.8*0.360 + 0.2*1/3.
	want := []string{"Channels carry values 0.5617", "Go is fast 0.3550"}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Fatalf("Recall mismatch (-want +got):\n%s", diff)
	}
}

// TestRecallIsRepeatable: the same store and query give the same facts with
// the same scores, to the last bit, however Go orders its maps: the weights
// are summed in word order.
func TestRecallIsRepeatable(t *testing.T) {
	s := openTest(t)
	put(t, s,
		Fact{Subject: "alpha beta", Predicate: "gamma", Object: "delta epsilon zeta", Confidence: 0.7},
		Fact{Subject: "beta", Predicate: "eta", Object: "theta", Confidence: 1},
		Fact{Subject: "gamma", Predicate: "iota", Object: "kappa", Confidence: 0.9},
		Fact{Subject: "delta", Predicate: "beta", Object: "lambda", Confidence: 0.8},
	)
	const q = "alpha beta gamma delta epsilon zeta eta iota mu nu xi"
	first, err := s.Recall(context.Background(), q, 0, 0)
	if err != nil || len(first) != 4 {
		t.Fatalf("Recall = %v, %v", first, err)
	}
	for range 50 {
		again, err := s.Recall(context.Background(), q, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range first {
			if again[i].Text() != first[i].Text() || math.Float64bits(again[i].Score) != math.Float64bits(first[i].Score) {
				t.Fatalf("recall %d: %s %v, first time %s %v", i, again[i].Text(), again[i].Score, first[i].Text(), first[i].Score)
			}
		}
	}
}

func TestRecallLimitAndEmptyQuery(t *testing.T) {
	s := openTest(t)
	put(t, s,
		Fact{Subject: "alpha", Predicate: "x", Object: "go", Confidence: 1},
		Fact{Subject: "beta", Predicate: "x", Object: "go", Confidence: 1},
	)
	got, err := s.Recall(context.Background(), "go", 1, 0)
	if err != nil || len(got) != 1 || got[0].Subject != "beta" {
		t.Fatalf("Recall limit 1 = %v, %v; want the newer fact only", got, err)
	}
	got, err = s.Recall(context.Background(), "go", 0, 0)
	if err != nil || len(got) != 2 {
		t.Fatalf("Recall limit 0 = %v, %v; want both facts", got, err)
	}
	got, err = s.Recall(context.Background(), "the of ?", 5, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("Recall with no words = %v, %v; want nothing", got, err)
	}
}

func TestRecallCancelled(t *testing.T) {
	s := openTest(t)
	put(t, s, Fact{Subject: "a", Predicate: "b", Object: "c", Confidence: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Recall(ctx, "c", 5, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recall on a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.Put(ctx, Fact{Subject: "a", Predicate: "b", Object: "c", Confidence: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestReopenKeepsFacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, Fact{Subject: "a", Predicate: "b", Object: "c", Confidence: 1})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.All(context.Background())
	if err != nil || len(got) != 1 || got[0].Object != "c" {
		t.Fatalf("after reopening: %v, %v", got, err)
	}
}

func TestOpenRejectsAFileThatIsNotAStore(t *testing.T) {
	for _, size := range []int{1, 100, 4096, 4097, 16384} {
		path := filepath.Join(t.TempDir(), "notes.db")
		junk := make([]byte, size)
		copy(junk, "this is a text file, not a bbolt database")
		if err := os.WriteFile(path, junk, 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := Open(path); !errors.Is(err, ErrCorrupt) {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open(%d bytes of junk) = %v, want ErrCorrupt", size, err)
		}
	}
}

func TestOpenTruncatedStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, Fact{Subject: "a", Predicate: "b", Object: "c", Confidence: 1})
	s.Close()
	if err := os.Truncate(path, 5000); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(path); !errors.Is(err, ErrCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open(truncated) = %v, want ErrCorrupt", err)
	}
}

func TestOpenLockedStoreFailsInsteadOfHanging(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := OpenWith(path, Options{Timeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestConcurrentPutAndRecall(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- s.Put(ctx, Fact{Subject: fmt.Sprintf("agent%d", i), Predicate: "knows", Object: "go", Confidence: 1})
		}()
		go func() {
			defer wg.Done()
			_, err := s.Recall(ctx, "knows go", 3, 0)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.All(ctx)
	if len(all) != 8 {
		t.Fatalf("stored %d facts, want 8", len(all))
	}
}

func TestRelevance(t *testing.T) {
	stop := newStopWords(englishStopWords())
	for _, tc := range []struct {
		query, text string
		n           int            // facts in the store
		df          map[string]int // facts holding each word
		conf, want  float64
	}{
		// In an empty store (or one where every word is as common) every
		// word weighs the same: coverage is the share of the query's words.
		{"capital France", "Paris is the capital of France", 0, nil, 1, 0.8 + 0.2*2.0/3},
		{"capital France", "Paris is the capital of France", 0, nil, 0.5, 0.5 * (0.8 + 0.2*2.0/3)},
		{"capital France", "Berlin is the capital of Germany", 4, map[string]int{"capital": 2, "france": 2}, 1, 0.8*0.5 + 0.2*1.0/4},
		{"capital France", "Berlin", 0, nil, 1, 0},
		{"", "anything", 0, nil, 1, 0},
		{"go", "Go", 0, nil, 2, 1},           // confidence clamps to 1
		{"go", "go", 0, nil, -1, 0},          // and to 0
		{"Go-1.26", "go 1 26", 0, nil, 1, 1}, // punctuation separates words
		// A rarer word weighs more: france in 1 fact of 9 (1 + ln 5),
		// capital in 9 (1 + ln 1 = 1).
		{"capital France", "France borders Spain", 9, map[string]int{"capital": 9, "france": 1},
			1, 0.8*(1+math.Log(5))/(2+math.Log(5)) + 0.2*1.0/4},
		{"capital France", "Berlin is the capital of Germany", 9, map[string]int{"capital": 9, "france": 1},
			1, 0.8*1/(2+math.Log(5)) + 0.2*1.0/4},
		// A word no fact holds weighs most: 1 + ln(1 + N).
		{"Earth moon count", "Earth has one moon", 1, map[string]int{"earth": 1, "moon": 1},
			1, 0.8*2*(1+math.Log(1))/(2+1+math.Log(2)) + 0.2*2.0/4},
	} {
		q := weigh(stop.words(tc.query), tc.n, tc.df)
		if got := q.relevance(stop.words(tc.text), tc.conf); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", tc.want) {
			t.Errorf("relevance(%q, %q, %v) = %v, want %v", tc.query, tc.text, tc.conf, got, tc.want)
		}
	}
}

func TestDecodeFact(t *testing.T) {
	good, _ := encodeFact(Fact{Subject: "s", Predicate: "p", Object: "o", Confidence: 0.5, CreatedAt: t0})
	if f, err := decodeFact(good); err != nil || f.Subject != "s" {
		t.Fatalf("decodeFact(good) = %v, %v", f, err)
	}
	for _, bad := range []string{
		``, `{`, `[]`, `{"v":2,"subject":"s","predicate":"p","object":"o","confidence":1,"created_at":"2026-01-01T00:00:00Z"}`,
		`{"v":1,"subject":"","predicate":"p","object":"o","confidence":1,"created_at":"2026-01-01T00:00:00Z"}`,
		`{"v":1,"subject":"s","predicate":"p","object":"o","confidence":7,"created_at":"2026-01-01T00:00:00Z"}`,
		`{"v":1,"subject":"s","predicate":"p","object":"o","confidence":1,"created_at":"2026-01-01T00:00:00Z","extra":1}`,
		`{"v":1,"subject":"s","predicate":"p","object":"o","confidence":1,"created_at":"2026-01-01T00:00:00Z"} {}`,
	} {
		if _, err := decodeFact([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeFact(%q) = %v, want ErrCorrupt", bad, err)
		}
	}
}

func FuzzDecodeFact(f *testing.F) {
	good, _ := encodeFact(Fact{Subject: "s", Predicate: "p", Object: "o", Confidence: 0.5, CreatedAt: t0})
	f.Add(good)
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"confidence":"NaN"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fact, err := decodeFact(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeFact error %v is not ErrCorrupt", err)
			}
			return
		}
		if err := fact.Validate(); err != nil {
			t.Fatalf("decodeFact accepted an invalid fact: %v", err)
		}
		// A decoded fact must survive a round trip unchanged.
		again, err := encodeFact(fact)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeFact(again)
		if err != nil || !cmp.Equal(back, fact) {
			t.Fatalf("round trip changed %+v into %+v (%v)", fact, back, err)
		}
	})
}

// FuzzRelevance holds the score to the scale docs/knowledge.md promises:
// in [0, confidence], 0 exactly when the fact holds no query word, and 1
// (at confidence 1) when the fact has exactly the query's words; whatever
// the store's counts.
func FuzzRelevance(f *testing.F) {
	f.Add("Tell me about the Earth", "Earth has one moon", uint8(3), uint8(1), 0.95)
	f.Add("capital France", "Paris is the capital of France", uint8(5), uint8(2), 1.0)
	f.Fuzz(func(t *testing.T, query, text string, n, df uint8, conf float64) {
		stop := newStopWords(englishStopWords())
		qw, tw := stop.words(query), stop.words(text)
		counts := map[string]int{}
		for w := range qw {
			counts[w] = int(df) % (int(n) + 1) // df never above N
		}
		q := weigh(qw, int(n), counts)
		got := q.relevance(tw, conf)
		if !(got >= 0 && got <= clamp01(conf)+1e-12) {
			t.Fatalf("relevance %v outside [0, %v]", got, clamp01(conf))
		}
		shared := 0
		for w := range qw {
			if _, ok := tw[w]; ok {
				shared++
			}
		}
		if (shared == 0) != (got == 0) && clamp01(conf) > 0 {
			t.Fatalf("relevance %v with %d shared words", got, shared)
		}
		if len(qw) > 0 && cmp.Equal(qw, tw) && math.Abs(q.relevance(tw, 1)-1) > 1e-12 {
			t.Fatalf("the query's own words score %v, want 1", q.relevance(tw, 1))
		}
	})
}
