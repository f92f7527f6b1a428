package temporal

import (
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/temporal/contract"
)

// closer records its Close.
type closer struct {
	name   string
	mu     sync.Mutex
	closed int
}

func (c *closer) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed++
	return nil
}

func (c *closer) closes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// manualCache is an idleCache on a clock the test moves, whose sweeps run
// when the test says.
type manualCache struct {
	*idleCache[*closer]
	now     time.Time
	pending []time.Time // when each scheduled sweep is due
}

func newManualCache(idle time.Duration, max int) *manualCache {
	m := &manualCache{now: time.Unix(1_700_000_000, 0)}
	m.idleCache = newIdleCache[*closer](idle, max)
	m.idleCache.now = func() time.Time { return m.now }
	m.idleCache.after = func(d time.Duration, f func()) func() bool {
		m.pending = append(m.pending, m.now.Add(d))
		return func() bool { return true }
	}
	return m
}

// advance moves the clock and runs the sweep when one is due.
func (m *manualCache) advance(d time.Duration) {
	m.now = m.now.Add(d)
	due := false
	var left []time.Time
	for _, at := range m.pending {
		if !at.After(m.now) {
			due = true
		} else {
			left = append(left, at)
		}
	}
	m.pending = left
	if due {
		m.sweepNow()
	}
}

// TestIdleCache: a value no one uses is closed once it has been idle for
// the idle time, never while in use; past the bound the one idle longest
// goes first and one in use stays; a value added twice is kept once;
// close closes everything and the cache keeps nothing after it.
func TestIdleCache(t *testing.T) {
	m := newManualCache(10*time.Minute, 2)
	a, b, c := &closer{name: "a"}, &closer{name: "b"}, &closer{name: "c"}

	got, release := m.addAcquired("a", a)
	if got != a {
		t.Fatal("addAcquired returned another value")
	}
	m.advance(time.Hour)
	if a.closes() != 0 || m.len() != 1 {
		t.Fatal("a value in use was closed")
	}
	release()
	release() // twice is once
	m.advance(9 * time.Minute)
	if a.closes() != 0 {
		t.Fatal("closed before its idle time")
	}
	again, release2, ok := m.acquire("a")
	if !ok || again != a {
		t.Fatal("the kept value was not found")
	}
	release2()
	m.advance(9 * time.Minute) // idle since the second release: not yet
	if a.closes() != 0 {
		t.Fatal("the idle time did not start again at the last release")
	}
	m.advance(2 * time.Minute)
	if a.closes() != 1 || m.len() != 0 {
		t.Fatalf("idle past its time: %d closes, %d kept", a.closes(), m.len())
	}
	if _, _, ok := m.acquire("a"); ok {
		t.Fatal("a closed value is still handed out")
	}

	// The bound: b idle, c in use, then a third: b (idle longest) goes.
	m.add("b", b)
	m.advance(time.Minute)
	_, releaseC := m.addAcquired("c", c)
	dup := &closer{name: "c again"}
	if kept, releaseDup := m.addAcquired("c", dup); kept != c || dup.closes() != 1 {
		t.Fatal("a value added twice was not kept once")
	} else {
		releaseDup()
	}
	d := &closer{name: "d"}
	m.add("d", d)
	if b.closes() != 1 || c.closes() != 0 || d.closes() != 0 || m.len() != 2 {
		t.Fatalf("past the bound: b %d, c %d, d %d closes, %d kept", b.closes(), c.closes(), d.closes(), m.len())
	}
	releaseC()
	if err := m.close(); err != nil {
		t.Fatal(err)
	}
	if c.closes() != 1 || d.closes() != 1 || m.len() != 0 {
		t.Fatalf("close: c %d, d %d closes, %d kept", c.closes(), d.closes(), m.len())
	}
	late := &closer{name: "late"}
	m.add("late", late)
	if late.closes() != 1 || m.len() != 0 {
		t.Fatal("a value added after close was kept")
	}
}

// TestIdleCacheConcurrent: acquiring, releasing, adding and sweeping from
// many goroutines closes each value at most once and never one in use
// (run with -race).
func TestIdleCacheConcurrent(t *testing.T) {
	c := newIdleCache[*closer](time.Millisecond, 3)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				key := string(rune('a' + (g+i)%5))
				v, release, ok := c.acquire(key)
				if !ok {
					v, release = c.addAcquired(key, &closer{name: key})
				}
				if v.closes() != 0 {
					t.Errorf("%s handed out closed", key)
				}
				if i%7 == 0 {
					c.sweepNow()
				}
				if v.closes() != 0 {
					t.Errorf("%s closed while in use", key)
				}
				release()
			}
		}()
	}
	wg.Wait()
	c.close()
}

// TestWorkerClosesIdleEngines: a worker's engine of a plan is kept while
// its activities run and closed once idle, and the next use builds it
// again.
func TestWorkerClosesIdleEngines(t *testing.T) {
	p, base := compile(t, "../examples/quickstart.hcl")
	acts := &Activities{BaseDir: base, EngineIdle: time.Hour}
	defer acts.Close()
	in, err := contract.NewStart(p, base, "", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if err := acts.Prepare(in); err != nil {
		t.Fatal(err)
	}
	key := engineKey(in.PlanDigest, in.ScriptsDigest)
	e, release, ok := acts.engines().acquire(key)
	if !ok {
		t.Fatal("the prepared engine is not kept")
	}
	cache := acts.engines()
	now := time.Now()
	cache.mu.Lock()
	cache.now = func() time.Time { return now }
	cache.mu.Unlock()
	now = now.Add(2 * time.Hour)
	cache.sweepNow()
	if cache.len() != 1 {
		t.Fatal("an engine in use was closed")
	}
	release()
	now = now.Add(2 * time.Hour)
	cache.sweepNow()
	if cache.len() != 0 {
		t.Fatal("an idle engine was kept")
	}
	// The closed engine still answers (Close releases its tools, which it
	// would build again), and the worker builds a new one when asked.
	if _, err := e.AgentAddress(""); err != nil {
		t.Fatal(err)
	}
	if err := acts.Prepare(in); err != nil {
		t.Fatal(err)
	}
	e2, release2, ok := acts.engines().acquire(key)
	if !ok || e2 == e {
		t.Fatal("the engine was not built again")
	}
	release2()
}
