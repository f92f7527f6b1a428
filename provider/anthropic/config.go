package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// DefaultBaseURL is Anthropic's API; requests go to its /v1/messages.
const DefaultBaseURL = plan.DefaultAnthropicBaseURL

// DefaultMaxTokens is the max_tokens sent when neither the request nor the
// model sets one: the API requires the field.
const DefaultMaxTokens = plan.DefaultMaxTokens

// MinThinkingBudget is the least budget_tokens the API accepts.
const MinThinkingBudget = plan.MinThinkingBudgetTokens

// Thinking modes.
const (
	ThinkingOff      = "off"
	ThinkingEnabled  = "enabled"  // with a budget of thinking tokens
	ThinkingAdaptive = "adaptive" // the model decides how much to think
)

// Config configures one model endpoint.
type Config struct {
	BaseURL string // default DefaultBaseURL; a trailing /v1 is dropped
	APIKey  string
	Model   string // the model's name at the API, e.g. "claude-sonnet-4-5"

	// APIKeyEnv names the variable the key came from; it is used only to
	// say what to set when the key is missing.
	APIKeyEnv string
	// AllowNoKey lets a remote endpoint be used without a key (a gateway
	// that adds it). Loopback endpoints never need one.
	AllowNoKey bool

	// MaxTokens is the max_tokens sent when the request sets no
	// MaxOutputTokens (default DefaultMaxTokens).
	MaxTokens int
	// Thinking is ThinkingOff (default), ThinkingEnabled with
	// ThinkingBudget tokens, or ThinkingAdaptive.
	Thinking       string
	ThinkingBudget int
	// PromptCache is the time-to-live of the cache breakpoint the request
	// asks for ("5m" or "1h"); "" or "none" asks for none.
	PromptCache string

	Timeouts plan.ModelTimeouts
	Retry    plan.TransportRetry
	// Streaming asks for server-sent events; false makes one plain request
	// per turn and delivers the whole content as a single event.
	Streaming bool
	// MaxResponseBytes bounds one response: text, thinking and tool calls
	// together (default plan.DefaultMaxResponseBytes). A response that
	// passes it fails with kind ResponseTooLarge.
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
	client *http.Client
	url    string // the base URL and /v1/messages
}

var _ provider.Model = (*Model)(nil)

// New checks cfg and returns the Model. A missing key is a *provider.Error of
// kind MissingAPIKey; other configuration mistakes are InvalidRequest.
func New(cfg Config) (*Model, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	// Requests go to /v1/messages under the base URL; one written the
	// OpenAI way, up to /v1, would otherwise ask for /v1/v1/messages.
	cfg.BaseURL = strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "base_url", Err: fmt.Errorf("base_url %q is not an http or https URL", cfg.BaseURL)}
	}
	if cfg.Model == "" {
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "name", Err: errors.New("the model's name is required")}
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Thinking == "" {
		cfg.Thinking = ThinkingOff
	}
	switch {
	case cfg.MaxTokens < 1:
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "max_tokens", Err: fmt.Errorf("max_tokens must be at least 1, not %d", cfg.MaxTokens)}
	case cfg.Thinking != ThinkingOff && cfg.Thinking != ThinkingEnabled && cfg.Thinking != ThinkingAdaptive:
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "thinking", Err: fmt.Errorf("thinking %q is not off, enabled or adaptive", cfg.Thinking)}
	case cfg.Thinking == ThinkingEnabled && cfg.ThinkingBudget < MinThinkingBudget:
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "thinking_budget_tokens", Err: fmt.Errorf("thinking_budget_tokens must be at least %d, not %d", MinThinkingBudget, cfg.ThinkingBudget)}
	case cfg.PromptCache != "" && cfg.PromptCache != "none" && cfg.PromptCache != "5m" && cfg.PromptCache != "1h":
		return nil, &provider.Error{Kind: provider.InvalidRequest, Detail: "prompt_cache", Err: fmt.Errorf("prompt_cache %q is not none, 5m or 1h", cfg.PromptCache)}
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
	// The key and the base URL come from the plan alone: nothing is read
	// from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL).
	return &Model{cfg: cfg, client: httpClient(cfg.HTTPClient, cfg.Timeouts.Connect.Std()), url: cfg.BaseURL + "/v1/messages"}, nil
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

// httpClient returns the client requests are made with: base's settings, a transport
// that records what the classification needs from each exchange and bounds
// its body, and a dialer under the connect timeout.
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

var errConnectTimeout = errors.New("connect timeout")

// connectWithin bounds each dial by d. A dial that fails once d has run
// out is a connect timeout, whatever error the dialer made of it (the
// socket's deadline can fire before the context's timer, so the error may
// be an i/o timeout rather than the context's); it is recorded on the
// attempt's exchange, which the dial's context carries, so classify
// names it deterministically.
func connectWithin(d time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		deadline := time.Now().Add(d)
		dctx, cancel := context.WithDeadlineCause(ctx, deadline, errConnectTimeout)
		defer cancel()
		conn, err := dial(dctx, network, addr)
		if err != nil && ctx.Err() == nil && (errors.Is(context.Cause(dctx), errConnectTimeout) || !time.Now().Before(deadline)) {
			if ex, _ := ctx.Value(exchangeKey{}).(*exchange); ex != nil {
				ex.connectTimeout.Store(true)
			}
			return nil, &connectTimeoutError{err: err}
		}
		return conn, err
	}
}

// connectTimeoutError marks a dial that ran out of the connect timeout.
type connectTimeoutError struct{ err error }

func (e *connectTimeoutError) Error() string { return "connect timeout: " + e.err.Error() }
func (e *connectTimeoutError) Unwrap() error { return e.err }

// exchange is what the recorder saw of one attempt's HTTP exchange; it
// rides in the request's context, which every layer of the transport (the
// dial too) sees.
type exchange struct {
	// set by attempt, for the body's bound
	stream   bool
	maxBytes int64

	// connectTimeout is set by the dial, which runs on a goroutine of
	// the HTTP transport.
	connectTimeout atomic.Bool

	sent       bool
	status     int
	retryAfter time.Duration
	body       io.Reader // the response body, bounded, for drain
	over       error     // the bound the body passed, if it did
}

type exchangeKey struct{}

type recorder struct{ base http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = provider.WithTraceContext(req)
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
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
// capabilities are listed but leave out "streaming" gets plain requests.
func ConfigFromPlan(m plan.Model, baseURL, apiKey string) Config {
	streaming := len(m.Capabilities) == 0
	for _, c := range m.Capabilities {
		streaming = streaming || c == "streaming"
	}
	return Config{
		BaseURL:   baseURL,
		APIKey:    apiKey,
		APIKeyEnv: m.APIKeyEnv,
		Model:     m.Name,
		Timeouts:  m.Timeouts,
		Retry:     m.Retry,
		Streaming: streaming,

		MaxTokens:      m.MaxTokens,
		Thinking:       m.Thinking,
		ThinkingBudget: m.ThinkingBudgetTokens,
		PromptCache:    m.PromptCache,

		MaxResponseBytes: m.MaxResponseBytes,
	}
}
