package knowledge

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
)

// Fact is one thing an agent knows: Subject Predicate Object, believed with
// Confidence in [0, 1], recorded from Source (an agent, a run, a person).
type Fact struct {
	Subject    string    `json:"subject"`
	Predicate  string    `json:"predicate"`
	Object     string    `json:"object"`
	Confidence float64   `json:"confidence"`
	Source     string    `json:"source,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Text is the fact as one sentence, the form recall matches and the engine
// shows to a model.
func (f Fact) Text() string {
	return f.Subject + " " + f.Predicate + " " + f.Object
}

// ErrInvalidFact is wrapped by every error about a fact's content.
var ErrInvalidFact = errors.New("invalid fact")

// Validate reports what is wrong with f, if anything.
func (f Fact) Validate() error {
	for _, field := range []struct{ name, value string }{
		{"subject", f.Subject}, {"predicate", f.Predicate}, {"object", f.Object},
	} {
		if strings.TrimSpace(field.value) == "" {
			return fmt.Errorf("%w: %s is empty", ErrInvalidFact, field.name)
		}
	}
	if math.IsNaN(f.Confidence) || f.Confidence < 0 || f.Confidence > 1 {
		return fmt.Errorf("%w: confidence %v is outside 0..1", ErrInvalidFact, f.Confidence)
	}
	return nil
}

// key identifies a fact by its normalized triple, so "Earth has one moon" and
// " earth  HAS one moon" are one fact whose confidence a second Put updates.
// The NUL separator cannot occur inside normalized text, so distinct
// triples never share a key.
func (f Fact) key() []byte {
	sum := sha256.Sum256([]byte(normalize(f.Subject) + "\x00" + normalize(f.Predicate) + "\x00" + normalize(f.Object)))
	return sum[:]
}

func normalize(s string) string {
	return strings.ToLower(strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == 0
	}), " "))
}

// recordVersion is the version of a stored fact's encoding. A store written by
// a newer symbi fails to decode with a clear error instead of being misread.
const recordVersion = 1

type record struct {
	Version int `json:"v"`
	Fact
}

func encodeFact(f Fact) ([]byte, error) {
	return json.Marshal(record{Version: recordVersion, Fact: f})
}

// ErrCorrupt is wrapped by errors about a store whose content cannot be read.
var ErrCorrupt = errors.New("knowledge store is corrupt")

// decodeFact reads one stored fact. Every field is checked, because a store is
// a file on disk that anything may have written to.
func decodeFact(b []byte) (Fact, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r record
	if err := dec.Decode(&r); err != nil {
		return Fact{}, fmt.Errorf("%w: stored fact: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return Fact{}, fmt.Errorf("%w: stored fact has trailing data", ErrCorrupt)
	}
	if r.Version != recordVersion {
		return Fact{}, fmt.Errorf("%w: stored fact has version %d, this symbi reads %d", ErrCorrupt, r.Version, recordVersion)
	}
	if err := r.Fact.Validate(); err != nil {
		return Fact{}, fmt.Errorf("%w: stored fact: %v", ErrCorrupt, err)
	}
	return r.Fact, nil
}
