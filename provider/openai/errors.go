package openai

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
)

// Causes of an attempt's cancellation, told apart with context.Cause.
var (
	errTotalTimeout      = errors.New("total timeout")
	errFirstEventTimeout = errors.New("first_event timeout")
	errIdleTimeout       = errors.New("idle timeout")
)

// failure is a classified error and whether another attempt may cure it.
type failure struct {
	err       error // a *provider.Error, or the caller's ctx.Err()
	retryable bool
}

// classify turns what go-openai or the transport returned into a typed
// error. ctx is the call's context (with the total timeout), actx the
// attempt's (with the first-event and idle timers).
func (m *Model) classify(ctx, actx context.Context, err error, ex *exchange) failure {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errTotalTimeout) {
			return failure{err: m.typed(provider.Timeout, "total", 0, fmt.Errorf("no complete answer within %s", m.cfg.Timeouts.Total))}
		}
		// The caller's own cancellation or deadline is not a provider
		// failure: hand it back as it is.
		return failure{err: ctx.Err()}
	}
	if ex.over != nil {
		// Whatever go-openai made of a body cut off at its bound.
		return failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, ex.over)}
	}
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errFirstEventTimeout):
		return failure{err: m.typed(provider.Timeout, "first_event", 0, fmt.Errorf("no event within %s", m.cfg.Timeouts.FirstEvent))}
	case errors.Is(cause, errIdleTimeout):
		return failure{err: m.typed(provider.Timeout, "idle", 0, fmt.Errorf("no event for %s", m.cfg.Timeouts.Idle))}
	}
	var cte *connectTimeoutError
	if errors.As(err, &cte) {
		return failure{err: m.typed(provider.Timeout, "connect", 0, fmt.Errorf("no connection within %s", m.cfg.Timeouts.Connect))}
	}

	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		// go-openai's APIError is an error response's body (with its
		// status) or an error sent inside the stream (with none).
		return m.apiFailure(apiErr.HTTPStatusCode, apiErr, inStream, ex)
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		// An error response whose body is not an OpenAI error object.
		return m.apiFailure(reqErr.HTTPStatusCode, &goopenai.APIError{Message: snippet(reqErr.Body)}, "", ex)
	}

	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages):
		return failure{err: m.typed(provider.MalformedResponse, "", ex.status, err)}
	case errors.Is(err, errWireBody):
		return failure{err: m.typed(provider.InvalidRequest, "", 0, err)}
	case isPermanentConnectionError(err):
		// Another attempt meets the same certificate or the same missing host.
		return failure{err: m.typed(provider.TransportFailed, "", 0, err)}
	case errors.Is(err, errTruncated), errors.Is(err, io.ErrUnexpectedEOF) && ex.status != 0:
		// An unexpected EOF after the response began is a body cut short:
		// a truncated stream, whether it ended between events or inside one.
		return failure{err: m.typed(provider.TransportFailed, "truncated", ex.status, err), retryable: true}
	case isConnectionError(err):
		return failure{err: m.typed(provider.TransportFailed, "", ex.status, err), retryable: true}
	case !ex.sent:
		// go-openai refused the request before sending it (a parameter
		// its validator rejects for this model).
		return failure{err: m.typed(provider.InvalidRequest, "", 0, err)}
	}
	return failure{err: m.typed(provider.TransportFailed, "", ex.status, err)}
}

// Where an error object came in a response that began with 200.
const (
	inStream = "error inside the stream"
	inAnswer = "error inside the answer"
)

// apiFailure is the failure an error object describes, classified by
// classifyError. status is the HTTP status of the error response it came
// in; 0 for an error sent in a response that began with 200 (where says
// which), reported with no status: no error status was on the wire.
func (m *Model) apiFailure(status int, e *goopenai.APIError, where string, ex *exchange) failure {
	c := errorCodeOf(e.Code)
	kind, detail, retryable := classifyError(status, c, e.Type)
	msg := e.Message
	if status == 0 {
		// Inside a stream the type and a numeric code are all there is
		// to tell what went wrong: say them.
		var said []string
		if e.Type != "" && e.Type != detail {
			said = append(said, "type "+e.Type)
		}
		if c.number != 0 {
			said = append(said, fmt.Sprintf("code %d", c.number))
		}
		if len(said) > 0 {
			where += " (" + strings.Join(said, ", ") + ")"
		}
		if msg == "" {
			msg = where
		} else {
			msg = where + ": " + msg
		}
	}
	if msg == "" {
		msg = "no message"
	}
	pe := m.typed(kind, detail, status, errors.New(msg))
	if kind == provider.RateLimited {
		pe.RetryAfter = ex.retryAfter
	}
	return failure{err: pe, retryable: retryable}
}

// errorCode is an error object's code: text ("insufficient_quota"), a
// number (vLLM, LiteLLM and OpenRouter put the HTTP status there, as a
// number or as text), or nothing (absent, or null as Ollama sends it).
type errorCode struct {
	text   string // a code that is not a number
	number int    // a code that is an HTTP error status, 400-599
}

// errorCodeOf reads the code go-openai decoded. go-openai decodes a null
// code as the number 0, which no server means as a code.
func errorCodeOf(code any) errorCode {
	switch c := code.(type) {
	case int:
		return errorCode{number: errorStatus(int64(c))}
	case float64:
		if c == float64(int64(c)) {
			return errorCode{number: errorStatus(int64(c))}
		}
	case string:
		if n, err := strconv.ParseInt(c, 10, 64); err == nil {
			return errorCode{number: errorStatus(n)}
		}
		return errorCode{text: c}
	}
	return errorCode{}
}

func errorStatus(n int64) int {
	if n >= 400 && n <= 599 {
		return int(n)
	}
	return 0
}

// classifyError says what an error object means, the same way for an
// error response and for an error sent inside a stream: first by the names
// that say it whatever the status (a code, or a type that OpenAI uses as a
// code), then by the HTTP status (or, inside a stream, a numeric code),
// then by a generic type. detail is the error's code, or the name that
// decided. An error inside a stream that says nothing more is the server
// failing mid-answer, as a 5xx would: transport_failed, retryable.
func classifyError(status int, code errorCode, typ string) (kind provider.ErrorKind, detail string, retryable bool) {
	detail = code.text
	for _, name := range []string{code.text, typ} {
		switch name {
		case "insufficient_quota":
			// An exhausted quota does not come back by waiting.
			return provider.RateLimited, name, false
		case "rate_limit_exceeded", "rate_limit_error", "requests", "tokens":
			return provider.RateLimited, orName(detail, name), true
		case "invalid_api_key", "authentication_error", "permission_error":
			return provider.AuthenticationFailed, orName(detail, name), false
		case "model_not_found":
			return provider.ModelUnavailable, name, false
		}
	}
	if status == 0 {
		status = code.number
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return provider.AuthenticationFailed, detail, false
	case status == http.StatusPaymentRequired:
		// Credits exhausted (OpenRouter): a quota, not a wait.
		return provider.RateLimited, detail, false
	case status == http.StatusNotFound:
		return provider.ModelUnavailable, detail, false
	case status == http.StatusTooManyRequests:
		return provider.RateLimited, detail, true
	case status >= 500:
		return provider.TransportFailed, detail, true
	case status != 0:
		return provider.InvalidRequest, detail, false
	}
	switch typ {
	case "invalid_request_error", "BadRequestError":
		return provider.InvalidRequest, detail, false
	case "not_found_error", "NotFoundError":
		return provider.ModelUnavailable, detail, false
	}
	return provider.TransportFailed, detail, true
}

func orName(detail, name string) string {
	if detail != "" {
		return detail
	}
	return name
}

var errTruncated = errors.New("the stream ended before its finish reason")

func isPermanentConnectionError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var dnsErr *net.DNSError
	return errors.As(err, &certErr) || (errors.As(err, &dnsErr) && dnsErr.IsNotFound)
}

func isConnectionError(err error) bool {
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &netErr)
}

// typed builds a provider error whose text cannot reveal the API key, even
// when a server echoes it back.
func (m *Model) typed(kind provider.ErrorKind, detail string, status int, err error) *provider.Error {
	if err != nil && len(m.cfg.APIKey) >= 4 {
		err = redacted{err: err, key: m.cfg.APIKey}
	}
	return &provider.Error{Kind: kind, Detail: detail, StatusCode: status, Err: err}
}

type redacted struct {
	err error
	key string
}

func (r redacted) Error() string { return strings.ReplaceAll(r.err.Error(), r.key, "[redacted]") }
func (r redacted) Unwrap() error { return r.err }

func snippet(body []byte) string {
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "empty error body"
	}
	return s
}

// parseRetryAfter reads how long the server asked the client to wait:
// retry-after-ms (OpenAI's, in milliseconds), else Retry-After in seconds or
// as an HTTP date. Zero when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 1e9 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
