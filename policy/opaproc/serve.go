package opaproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/symbi-dev/symbi/policy"
)

// Serve answers requests read from r on w until r ends, preparing policies
// with engine (policy/opa's, in the helper). Each request is answered in a
// goroutine of its own, so one slow evaluation holds up no other; answers
// carry their request's ID. A line that is not a request ends Serve with an
// error: the other side is not symbi.
func Serve(ctx context.Context, r io.Reader, w io.Writer, engine policy.OPAEngine) error {
	s := &server{engine: engine, gates: map[uint64]policy.OPAGate{}, w: bufio.NewWriter(w)}
	s.enc = json.NewEncoder(s.w)
	in := bufio.NewReaderSize(r, 64<<10)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		req := new(request)
		if err := decodeLine(line, req); err != nil {
			return fmt.Errorf("%s: a line that is not a request: %v", Binary, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.answer(s.handle(ctx, req))
		}()
	}
}

type server struct {
	engine policy.OPAEngine

	mu    sync.RWMutex
	next  uint64
	gates map[uint64]policy.OPAGate

	wmu sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
}

func (s *server) answer(resp *response) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.enc.Encode(resp); err != nil {
		resp = &response{ID: resp.ID, Error: "encoding the answer: " + err.Error()}
		_ = s.enc.Encode(resp)
	}
	_ = s.w.Flush()
}

func (s *server) handle(ctx context.Context, req *request) *response {
	resp := &response{ID: req.ID}
	if req.Op == opHello {
		resp.Version = Version()
		return resp
	}
	if req.Op == opLoad {
		if req.Policy == nil {
			resp.Error = "load without a policy"
			return resp
		}
		g, err := s.engine.PrepareOPA(ctx, req.Address, *req.Policy, req.BaseDir)
		var le policy.LoadErrors
		switch {
		case errors.As(err, &le):
			resp.LoadErrors = toWire(le)
		case err != nil:
			resp.Error = err.Error()
		default:
			s.mu.Lock()
			s.next++
			s.gates[s.next] = g
			resp.Handle = s.next
			s.mu.Unlock()
		}
		return resp
	}
	switch req.Op {
	case opRelease:
		s.mu.Lock()
		delete(s.gates, req.Handle)
		s.mu.Unlock()
		return resp
	case opCount:
		s.mu.RLock()
		resp.Handle = uint64(len(s.gates))
		s.mu.RUnlock()
		return resp
	}
	s.mu.RLock()
	g := s.gates[req.Handle]
	s.mu.RUnlock()
	if g == nil {
		resp.Error = fmt.Sprintf("no policy loaded as %d", req.Handle)
		return resp
	}
	switch req.Op {
	case opDecide, opExplain:
		if req.Input == nil {
			resp.Error = req.Op + " without an input"
			return resp
		}
		in := decodeInput(req.Input)
		var d policy.Decision
		if req.Op == opDecide {
			d = g.Decide(ctx, in)
		} else {
			d, resp.Text = g.Explain(ctx, in)
		}
		resp.Decision = &d
	case opTests:
		resp.Tests = g.RegoTests(ctx)
	case opImpure:
		resp.Impure, _ = g.Impure(ctx)
	default:
		resp.Error = fmt.Sprintf("unknown operation %q", req.Op)
	}
	return resp
}
