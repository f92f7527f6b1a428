package opaproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/internal/sibling"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// Client is a policy.OPAEngine that prepares and decides OPA policies in the
// symbi-opa helper. It starts the helper with the first policy it prepares
// and shares it among every policy and goroutine of the process; Close
// stops it. A Client is safe for concurrent use.
type Client struct {
	find    func() (string, error) // the helper's path
	version string                 // what the helper must answer the hello with

	mu   sync.Mutex
	proc *proc
	err  error // the helper could not be started; every later load fails the same
}

// NewClient returns a client that runs the helper find names, and expects
// it to be of this build (Version).
func NewClient(find func() (string, error)) *Client {
	return &Client{find: find, version: Version()}
}

// PrepareOPA loads the policy in the helper, starting the helper first if
// it is not running.
func (c *Client) PrepareOPA(ctx context.Context, address string, pol plan.OPAPolicy, baseDir string) (policy.OPAGate, error) {
	p, err := c.start(ctx)
	if err != nil {
		return nil, policy.LoadErrors{{Policy: address, Err: err}}
	}
	resp, err := p.call(ctx, &request{Op: opLoad, Address: address, Policy: &pol, BaseDir: baseDir})
	switch {
	case err != nil:
		return nil, policy.LoadErrors{{Policy: address, Err: fmt.Errorf("opa: %w", err)}}
	case len(resp.LoadErrors) > 0:
		return nil, fromWire(resp.LoadErrors)
	case resp.Error != "":
		return nil, policy.LoadErrors{{Policy: address, Err: errors.New(resp.Error)}}
	}
	g := &gate{p: p, handle: resp.Handle}
	// A gate nobody holds any more is released in the helper, which would
	// otherwise keep every policy a long process (the REPL's :gate
	// prepares one per call) ever loaded.
	runtime.AddCleanup(g, p.release, resp.Handle)
	return g, nil
}

// start runs the helper once; a failure is remembered, as the helper is
// either there and of this build or not.
func (c *Client) start(ctx context.Context) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil || c.err != nil {
		return c.proc, c.err
	}
	path, err := c.find()
	if err == nil {
		c.proc, err = startProc(ctx, path, c.version)
	}
	c.err = err
	return c.proc, err
}

// Close stops the helper, if it runs: its stdin closes and it exits; one
// that does not within a second is killed.
func (c *Client) Close() error {
	c.mu.Lock()
	p := c.proc
	c.proc, c.err = nil, errors.New("opa: the OPA helper was stopped")
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.stop(time.Second)
}

// Pid is the helper's process ID, 0 when none runs: for tests that check
// nothing is left behind.
func (c *Client) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// proc is a running helper: requests are written under wmu, and one reader
// hands each response to the caller waiting on its ID.
type proc struct {
	path  string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	wmu sync.Mutex
	enc *json.Encoder

	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan response
	dead    error         // why the helper is gone; nil while it runs
	done    chan struct{} // closed when the reader has seen the helper exit
}

func startProc(ctx context.Context, path, version string) (*proc, error) {
	cmd := exec.Command(path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("opa: starting the OPA helper %s: %w", path, err)
	}
	p := &proc{path: path, cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), pending: map[uint64]chan response{}, done: make(chan struct{})}
	go p.read(stdout)
	resp, err := p.call(ctx, &request{Op: opHello, Version: version})
	if err == nil && resp.Version != version {
		err = fmt.Errorf("it is of another build: it says %q, symbi is %q; build both from the same sources with `go build -o bin/ ./cmd/...`", resp.Version, version)
	}
	if err != nil {
		_ = p.stop(0)
		return nil, fmt.Errorf("opa: the OPA helper %s: %w", path, err)
	}
	return p, nil
}

// read hands every response to its caller until the helper's stdout ends;
// then the helper is dead, and every waiting and later call fails.
func (p *proc) read(stdout io.Reader) {
	r := bufio.NewReaderSize(stdout, 64<<10)
	var why error
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			why = err
			break
		}
		var resp response
		if err := json.Unmarshal(line, &resp); err != nil {
			why = fmt.Errorf("an unreadable answer: %v", err)
			break
		}
		p.mu.Lock()
		ch := p.pending[resp.ID]
		delete(p.pending, resp.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
	_ = p.cmd.Process.Kill() // an unreadable helper is not trusted further
	werr := p.cmd.Wait()
	dead := fmt.Errorf("the OPA helper %s exited", p.path)
	switch {
	case werr != nil:
		dead = fmt.Errorf("the OPA helper %s exited (%v)", p.path, werr)
	case why != nil && why != io.EOF:
		dead = fmt.Errorf("the OPA helper %s failed: %v", p.path, why)
	}
	p.mu.Lock()
	p.dead = dead
	for id, ch := range p.pending {
		delete(p.pending, id)
		close(ch)
	}
	p.mu.Unlock()
	close(p.done)
}

// call sends req and waits for its answer, the helper's death, or ctx.
func (p *proc) call(ctx context.Context, req *request) (response, error) {
	ch := make(chan response, 1)
	p.mu.Lock()
	if p.dead != nil {
		p.mu.Unlock()
		return response{}, p.dead
	}
	p.next++
	req.ID = p.next
	p.pending[req.ID] = ch
	p.mu.Unlock()

	p.wmu.Lock()
	err := p.enc.Encode(req)
	p.wmu.Unlock()
	if err != nil {
		p.forget(req.ID)
		return response{}, p.deadOr(fmt.Errorf("writing to the OPA helper %s: %w", p.path, err))
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return response{}, p.deadOr(errors.New("the OPA helper exited"))
		}
		return resp, nil
	case <-ctx.Done():
		p.forget(req.ID)
		return response{}, ctx.Err()
	}
}

// release tells the helper to forget a policy, without waiting for its
// answer: it runs as a cleanup, which must not block.
func (p *proc) release(handle uint64) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = p.call(ctx, &request{Op: opRelease, Handle: handle})
	}()
}

func (p *proc) forget(id uint64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// deadOr is why the helper died, when it has, else err.
func (p *proc) deadOr(err error) error {
	select {
	case <-p.done:
	case <-time.After(100 * time.Millisecond): // a write to a dead helper fails before the reader sees it exit
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return p.dead
	}
	return err
}

// stop closes the helper's stdin and waits for it to exit, killing it after
// grace.
func (p *proc) stop(grace time.Duration) error {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// gate is an OPA policy loaded in the helper.
type gate struct {
	p      *proc
	handle uint64
}

// Decide asks the helper. A helper that cannot answer gives a deny marked
// as an engine error.
func (g *gate) Decide(ctx context.Context, in policy.Input) policy.Decision {
	d, _ := g.ask(ctx, opDecide, in)
	return d
}

// Explain asks the helper for the decision and its trace.
func (g *gate) Explain(ctx context.Context, in policy.Input) (policy.Decision, string) {
	return g.ask(ctx, opExplain, in)
}

func (g *gate) ask(ctx context.Context, op string, in policy.Input) (policy.Decision, string) {
	if err := ctx.Err(); err != nil {
		return deny("opa: not decided: %v", err), ""
	}
	w, err := encodeInput(in)
	if err != nil {
		return deny("opa: building the input: %v", err), ""
	}
	resp, err := g.p.call(ctx, &request{Op: op, Handle: g.handle, Input: w})
	runtime.KeepAlive(g) // not released while its request is in flight
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return deny("opa: not decided: %v", err), ""
	case err != nil:
		return deny("opa: not decided: %v; every decision of an OPA policy is a deny", err), ""
	case resp.Error != "":
		return deny("opa: %s", resp.Error), ""
	case resp.Decision == nil:
		return deny("opa: the OPA helper answered without a decision"), ""
	}
	return *resp.Decision, resp.Text
}

// RegoTests runs the policy's Rego tests in the helper.
func (g *gate) RegoTests(ctx context.Context) []policy.TestResult {
	resp, err := g.p.call(ctx, &request{Op: opTests, Handle: g.handle})
	runtime.KeepAlive(g)
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if err != nil {
		return []policy.TestResult{{Kind: "rego", Errored: true, Message: "opa: " + err.Error()}}
	}
	return resp.Tests
}

// Impure asks the helper which nondeterministic built-ins the policy calls.
func (g *gate) Impure(ctx context.Context) ([]string, error) {
	resp, err := g.p.call(ctx, &request{Op: opImpure, Handle: g.handle})
	runtime.KeepAlive(g)
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("opa: %w", err)
	}
	return resp.Impure, nil
}

func deny(format string, args ...any) policy.Decision {
	return policy.Decision{Outcome: policy.Deny, Reason: fmt.Sprintf(format, args...), Engine: "opa", EngineError: true}
}

// Find is the helper's path: beside the running executable (symbi's, after
// symlinks), then on PATH. The error says how to build it.
func Find() (string, error) {
	path, dir, ok := sibling.Find(Binary)
	if !ok {
		return "", fmt.Errorf("opa: %w: %s is neither beside symbi (in %s) nor on PATH: it runs symbi's OPA policies, a binary of its own; build both with `go build -o bin/ ./cmd/...` and run bin/symbi, or `go build -o %s ./cmd/%s`", policy.ErrNoOPAEngine, Binary, dir, dir, Binary)
	}
	return path, nil
}
