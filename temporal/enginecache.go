package temporal

import (
	"errors"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/temporal/contract"
)

// A worker builds one engine per plan and scripts digest it is asked to
// run, and an engine holds what its runs started: MCP server processes,
// open knowledge stores. A worker serves many plans over its life (every
// edit of a configuration is a new plan), so it keeps an engine only while
// it is used: one no activity has held for Idle is closed, and past Max
// engines the one idle longest is closed first. An engine in use by an
// activity is never closed; the next activity of its plan after it was
// closed builds it again (asking the run for its plan), as after a restart
// of the worker.

// Defaults of WorkerOptions.EngineIdle and WorkerOptions.MaxEngines.
const (
	DefaultEngineIdle = contract.DefaultEngineIdle
	DefaultMaxEngines = contract.DefaultMaxEngines
)

// idleCache holds values by key, counts their users, and closes those no
// one has used for idle, or the idle longest past max values.
type idleCache[V io.Closer] struct {
	idle time.Duration
	max  int
	now  func() time.Time
	// after schedules a sweep (time.AfterFunc; the tests' run it by hand).
	after func(time.Duration, func()) func() bool

	mu      sync.Mutex
	entries map[string]*cached[V]
	sweep   func() bool // stops the scheduled sweep, nil when none is
	closed  bool
}

type cached[V io.Closer] struct {
	v         V
	users     int
	idleSince time.Time
}

func newIdleCache[V io.Closer](idle time.Duration, max int) *idleCache[V] {
	if idle <= 0 {
		idle = DefaultEngineIdle
	}
	if max <= 0 {
		max = DefaultMaxEngines
	}
	return &idleCache[V]{idle: idle, max: max, now: time.Now, after: func(d time.Duration, f func()) func() bool {
		return time.AfterFunc(d, f).Stop
	}, entries: map[string]*cached[V]{}}
}

// acquire returns the value of key and a release the caller calls when it
// is done with it; ok is false when the cache has none.
func (c *idleCache[V]) acquire(key string) (v V, release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return v, nil, false
	}
	e.users++
	return e.v, c.releaser(e), true
}

// add keeps v as key's value, idle, unless key has one already: then v is
// closed and the one kept is returned. Past max values, those idle
// longest are closed.
func (c *idleCache[V]) add(key string, v V) V {
	kept, release := c.addAcquired(key, v)
	release()
	return kept
}

// addAcquired keeps v as key's value (or closes it and takes the one
// kept), in use until the release it returns is called; after close, v
// is not kept and release closes it.
func (c *idleCache[V]) addAcquired(key string, v V) (V, func()) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		e.users++
		c.mu.Unlock()
		v.Close()
		return e.v, c.releaser(e)
	}
	if c.closed {
		c.mu.Unlock()
		return v, func() { v.Close() }
	}
	e = &cached[V]{v: v, users: 1}
	c.entries[key] = e
	victims := c.overLocked()
	c.mu.Unlock()
	closeAll(victims)
	return v, c.releaser(e)
}

// releaser is the release of one use of e: the last makes e idle, and,
// past max values, closes those idle longest (e among them, when all
// others are in use).
func (c *idleCache[V]) releaser(e *cached[V]) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			var victims []V
			if e.users--; e.users == 0 {
				e.idleSince = c.now()
				victims = c.overLocked()
				c.scheduleLocked()
			}
			c.mu.Unlock()
			closeAll(victims)
		})
	}
}

// overLocked takes out, idle longest first, the idle values past max.
func (c *idleCache[V]) overLocked() []V {
	if len(c.entries) <= c.max {
		return nil
	}
	type idle struct {
		key   string
		since time.Time
	}
	var idles []idle
	for k, e := range c.entries {
		if e.users == 0 {
			idles = append(idles, idle{k, e.idleSince})
		}
	}
	slices.SortFunc(idles, func(a, b idle) int { return a.since.Compare(b.since) })
	var victims []V
	for _, x := range idles {
		if len(c.entries) <= c.max {
			break
		}
		victims = append(victims, c.entries[x.key].v)
		delete(c.entries, x.key)
	}
	return victims
}

// scheduleLocked makes sure a sweep is due when the first idle value's
// time is up.
func (c *idleCache[V]) scheduleLocked() {
	if c.sweep != nil || c.closed {
		return
	}
	next := time.Duration(-1)
	now := c.now()
	for _, e := range c.entries {
		if e.users == 0 {
			if d := c.idle - now.Sub(e.idleSince); next < 0 || d < next {
				next = max(d, 0)
			}
		}
	}
	if next >= 0 {
		c.sweep = c.after(next, c.sweepNow)
	}
}

// sweepNow closes the values idle for c.idle or longer and schedules the
// next sweep.
func (c *idleCache[V]) sweepNow() {
	c.mu.Lock()
	c.sweep = nil
	var victims []V
	now := c.now()
	for k, e := range c.entries {
		if e.users == 0 && now.Sub(e.idleSince) >= c.idle {
			victims = append(victims, e.v)
			delete(c.entries, k)
		}
	}
	c.scheduleLocked()
	c.mu.Unlock()
	closeAll(victims)
}

// len is how many values are kept.
func (c *idleCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// close closes every value, in use or not, and keeps no more.
func (c *idleCache[V]) close() error {
	c.mu.Lock()
	c.closed = true
	if c.sweep != nil {
		c.sweep()
		c.sweep = nil
	}
	var all []V
	for _, e := range c.entries {
		all = append(all, e.v)
	}
	c.entries = map[string]*cached[V]{}
	c.mu.Unlock()
	return closeAll(all)
}

func closeAll[V io.Closer](vs []V) error {
	var errs []error
	for _, v := range vs {
		errs = append(errs, v.Close())
	}
	return errors.Join(errs...)
}
