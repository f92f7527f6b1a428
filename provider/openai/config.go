package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// Config configures one model endpoint.
type Config struct {
	BaseURL string // default plan.DefaultOpenAIBaseURL
	APIKey  string
	Model   string // the model's name at the endpoint, e.g. "gpt-4o-mini"

	// APIKeyEnv names the variable the key came from; it is used only to
	// say what to set when the key is missing.
	APIKeyEnv string
	// AllowNoKey lets a remote endpoint be used without a key. Loopback
	// endpoints (localhost, 127.0.0.0/8, ::1), where Ollama, LM Studio,
	// vLLM and llama.cpp listen by default, never need one.
	AllowNoKey bool

	Timeouts plan.ModelTimeouts
	Retry    plan.TransportRetry
	// Streaming asks for server-sent events; false makes one plain request
	// per turn and delivers the whole content as a single event.
	Streaming bool
	// MaxResponseBytes bounds one response: content, reasoning and tool
	// calls together (default plan.DefaultMaxResponseBytes). A response
	// that passes it fails with kind ResponseTooLarge.
	MaxResponseBytes int64

	// HTTPClient is used for every request (default: a client of its own).
	// Its transport, if an *http.Transport, is cloned to add the connect
	// timeout; another RoundTripper is used as it is and must enforce
	// connection timeouts itself.
	HTTPClient *http.Client
	// Sleep waits between attempts (default: a timer that ends with ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for the backoff's jitter (default
	// math/rand/v2).
	Rand func() float64
}

// Model is a configured endpoint. Safe for concurrent use.
type Model struct {
	cfg    Config
	client *goopenai.Client
	// maxCompletionTokens says which field carries the output limit: OpenAI's
	// own API wants max_completion_tokens (its reasoning models reject
	// max_tokens); most compatible servers only know max_tokens.
	maxCompletionTokens bool
	// wire keeps the last request's converted messages and tools, so the
	// next call of a growing conversation converts only what is new.
	wire wireCache
}

var _ provider.Model = (*Model)(nil)

// New checks cfg and returns the Model. A missing key is a *provider.Error of
// kind MissingAPIKey; other configuration mistakes are InvalidRequest.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = plan.DefaultOpenAIBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "base_url", Err: fmt.Errorf("base_url %q is not an http or https URL", cfg.BaseURL)}
	}
	if cfg.Model == "" {
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "name", Err: errors.New("the model's name is required")}
	}
	if cfg.APIKey == "" && !cfg.AllowNoKey && !isLoopback(u.Hostname()) {
		msg := fmt.Sprintf("no API key for %s", cfg.BaseURL)
		if cfg.APIKeyEnv != "" {
			msg += fmt.Sprintf(": set %s", cfg.APIKeyEnv)
		}
		return nil, &provider.Error{Kind: provider.MissingAPIKey, Err: errors.New(msg)}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = httpClient(cfg.HTTPClient, cfg.Timeouts.Connect.Std())
	return &Model{
		cfg:                 cfg,
		client:              goopenai.NewClientWithConfig(oc),
		maxCompletionTokens: u.Hostname() == "api.openai.com",
	}, nil
}

func isLoopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// httpClient returns the client go-openai uses: base's settings, a transport
// that records what the client needs from response headers, and a dialer
// under the connect timeout.
func httpClient(base *http.Client, connect time.Duration) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	rt := c.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Best-of-N and parallel plan steps call one host concurrently;
		// the default of 2 idle connections would redial for the rest.
		t.MaxIdleConnsPerHost = 32
		rt = t
	}
	if t, ok := rt.(*http.Transport); ok && connect > 0 {
		t = t.Clone()
		dial := t.DialContext
		if dial == nil {
			dial = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
		}
		t.DialContext = connectWithin(connect, dial)
		rt = t
	}
	c.Transport = recorder{base: rt}
	return c
}

// connectTimeoutError marks a dial that ran out of the connect timeout.
type connectTimeoutError struct{ err error }

func (e *connectTimeoutError) Error() string { return "connect timeout: " + e.err.Error() }
func (e *connectTimeoutError) Unwrap() error { return e.err }

var errConnectTimeout = errors.New("connect timeout")

// connectWithin dials under the connect timeout. A dial that ran out of it
// is a *connectTimeoutError, every time: the dialer ends a connect at the
// deadline by a timer of its own ("i/o timeout"), which can fire before
// the context's, so the context may not be done yet when the dial returns.
// Once the deadline has passed its timer fires at once; waiting for it
// makes the context's cause say whose deadline it was.
func connectWithin(d time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		dctx, cancel := context.WithTimeoutCause(ctx, d, errConnectTimeout)
		defer cancel()
		conn, err := dial(dctx, network, addr)
		if err == nil {
			return conn, nil
		}
		if deadline, ok := dctx.Deadline(); ok && !time.Now().Before(deadline) {
			<-dctx.Done()
		}
		if ctx.Err() == nil && errors.Is(context.Cause(dctx), errConnectTimeout) {
			return nil, &connectTimeoutError{err: err}
		}
		return nil, err
	}
}

// exchange is what the recorder saw of one attempt's HTTP exchange; it rides
// in the request's context because go-openai's errors carry no headers.
type exchange struct {
	// set by attempt, for the body's bound
	stream   bool
	maxBytes int64

	sent       bool
	status     int
	retryAfter time.Duration
	body       io.Reader // the response body, bounded, for drain
	over       error     // the bound the body passed, if it did
	// done: the stream's "data: [DONE]" line went by. go-openai ends a
	// stream with io.EOF at [DONE] and at a body that ends without it
	// alike; this tells the complete stream from the cut one.
	done bool
	// plain is a plain answer's body as go-openai read it, for what
	// go-openai does not decode (reasoning under its other names).
	plain []byte
	// wire: the request's messages, which the recorder puts into the
	// body go-openai built without them (wire.go).
	wire *wireMessages
}

type exchangeKey struct{}

type recorder struct{ base http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = provider.WithTraceContext(req)
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil && ex.wire != nil {
		full, err := ex.wire.withMessages(req)
		if err != nil {
			return nil, err
		}
		req = full
	}
	if ex != nil {
		ex.sent = true
	}
	resp, err := r.base.RoundTrip(req)
	if err == nil && ex != nil {
		ex.status = resp.StatusCode
		ex.retryAfter = parseRetryAfter(resp.Header, time.Now())
		bound(resp, ex)
	}
	return resp, err
}

// ConfigFromPlan is the Config for a compiled model block. The base URL and
// key are passed in because the plan holds neither value: base_url may be a
// deferred expression and api_key_env only names the variable. A model whose
// capabilities are listed but leave out "streaming" gets plain requests; one
// without a list has the default capabilities.
func ConfigFromPlan(m plan.Model, baseURL, apiKey string) Config {
	caps := m.Capabilities
	if len(caps) == 0 {
		caps = plan.DefaultModel(m.Provider).Capabilities
	}
	streaming := slices.Contains(caps, "streaming")
	return Config{
		BaseURL:   baseURL,
		APIKey:    apiKey,
		APIKeyEnv: m.APIKeyEnv,
		Model:     m.Name,
		Timeouts:  m.Timeouts,
		Retry:     m.Retry,
		Streaming: streaming,

		MaxResponseBytes: m.MaxResponseBytes,
	}
}
