package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultOpenTimeout bounds how long Open waits for a store that another
// process holds open, so a second run fails with ErrLocked instead of hanging.
const DefaultOpenTimeout = 2 * time.Second

// ErrLocked means another process (or another Store in this one) has the
// file open.
var ErrLocked = errors.New("knowledge store is in use by another process")

var factsBucket = []byte("facts")

// Store is an open knowledge file. It is safe for concurrent use: bbolt
// serialises writers and lets readers run alongside them.
type Store struct {
	db       *bolt.DB
	path     string
	now      func() time.Time
	readOnly bool
}

// Options tune Open. The zero value is the default.
type Options struct {
	Timeout time.Duration    // how long to wait for a locked file; 0 = DefaultOpenTimeout
	Now     func() time.Time // the clock Put stamps facts with; nil = time.Now
	// ReadOnly opens an existing store for Recall and All only: it is
	// neither created nor written (Put fails with ErrReadOnly), and any
	// number of read-only openers share the file.
	ReadOnly bool
}

// ErrReadOnly is Put's error on a store opened ReadOnly.
var ErrReadOnly = errors.New("knowledge store is read-only")

// Open opens the store at path, creating it and its parent directories when
// missing.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOpenTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("knowledge store %s: %w", path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("knowledge store %s: %w", path, err)
	}
	existing := false
	if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Size() > 0 {
		existing = true
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly})
	if err != nil {
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, fmt.Errorf("%w: %s (waited %s)", ErrLocked, path, opts.Timeout)
		case existing && !errors.Is(err, fs.ErrPermission):
			// bbolt reports a foreign or truncated file in several ways
			// ("invalid database", "file size too small", checksum errors);
			// to the user they all mean the same thing.
			return nil, fmt.Errorf("%w: %s is not a knowledge store (%v)", ErrCorrupt, path, err)
		}
		return nil, fmt.Errorf("knowledge store %s: %w", path, err)
	}
	if opts.ReadOnly {
		return &Store{db: db, path: path, now: opts.Now, readOnly: true}, nil
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(factsBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("knowledge store %s: %w", path, err)
	}
	return &Store{db: db, path: path, now: opts.Now}, nil
}

// Close releases the file.
func (s *Store) Close() error { return s.db.Close() }

// Path is the file the store lives in.
func (s *Store) Path() string { return s.path }

// Put stores f. A fact with the same subject, predicate and object (compared
// case- and space-insensitively) is replaced: its confidence, source and time
// become f's, its text the latest spelling. A zero CreatedAt is stamped with
// the store's clock.
func (s *Store) Put(ctx context.Context, f Fact) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, s.path)
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if f.CreatedAt.IsZero() {
		f.CreatedAt = s.now()
	}
	f.CreatedAt = f.CreatedAt.UTC()
	b, err := encodeFact(f)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidFact, err)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(factsBucket).Put(f.key(), b)
	})
}

// Scored is a recalled fact with its relevance to the query.
type Scored struct {
	Fact
	Score float64
}

// Recall returns the facts whose relevance to query is at least threshold and
// above zero, best first, at most limit of them (limit <= 0: all). Ties go to
// the newer fact, then to the fact text in byte order, so a recall is
// repeatable. The relevance weighs each query word by how few of the store's
// facts hold it, so Recall reads every fact (in one read transaction) before
// scoring.
func (s *Store) Recall(ctx context.Context, query string, limit int, threshold float64) ([]Scored, error) {
	stop := newStopWords(englishStopWords())
	q := stop.words(query)
	if len(q) == 0 {
		return nil, nil
	}
	type candidate struct {
		fact  Fact
		words map[string]struct{}
	}
	var candidates []candidate
	n, df := 0, make(map[string]int, len(q))
	err := s.each(ctx, func(f Fact) {
		n++
		t := stop.words(f.Text())
		held := false
		for w := range q {
			if _, ok := t[w]; ok {
				df[w]++
				held = true
			}
		}
		if held {
			candidates = append(candidates, candidate{f, t})
		}
	})
	if err != nil {
		return nil, err
	}
	weighed := weigh(q, n, df)
	var out []Scored
	for _, c := range candidates {
		if score := weighed.relevance(c.words, c.fact.Confidence); score > 0 && score >= threshold {
			out = append(out, Scored{Fact: c.fact, Score: score})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.Text() < b.Text()
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// All returns every fact, ordered by subject, predicate and object.
func (s *Store) All(ctx context.Context) ([]Fact, error) {
	var out []Fact
	if err := s.each(ctx, func(f Fact) { out = append(out, f) }); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Subject != b.Subject {
			return a.Subject < b.Subject
		}
		if a.Predicate != b.Predicate {
			return a.Predicate < b.Predicate
		}
		return a.Object < b.Object
	})
	return out, nil
}

// each visits every stored fact in one read transaction, stopping early when
// ctx ends so a recall over a large store can be cancelled.
func (s *Store) each(ctx context.Context, visit func(Fact)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(factsBucket)
		if b == nil {
			return fmt.Errorf("%w: %s has no facts bucket", ErrCorrupt, s.path)
		}
		n := 0
		return b.ForEach(func(k, v []byte) error {
			if n++; n%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			f, err := decodeFact(v)
			if err != nil {
				return fmt.Errorf("%s, key %x: %w", s.path, k, err)
			}
			visit(f)
			return nil
		})
	})
}
