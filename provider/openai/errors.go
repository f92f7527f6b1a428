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
		status := apiErr.HTTPStatusCode
		code := fmt.Sprint(apiErr.Code)
		if apiErr.Code == nil {
			code = ""
		}
		if status == 0 {
			// An error sent inside a stream has no status of its own.
			status = statusOfErrorType(apiErr.Type, code)
		}
		return m.fromStatus(status, code, ex, errors.New(apiErr.Message))
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		return m.fromStatus(reqErr.HTTPStatusCode, "", ex, errors.New(snippet(reqErr.Body)))
	}

	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages):
		return failure{err: m.typed(provider.MalformedResponse, "", ex.status, err)}
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

func (m *Model) fromStatus(status int, code string, ex *exchange, err error) failure {
	switch {
	case code == "model_not_found":
		return failure{err: m.typed(provider.ModelUnavailable, code, status, err)}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return failure{err: m.typed(provider.AuthenticationFailed, code, status, err)}
	case status == http.StatusNotFound:
		return failure{err: m.typed(provider.ModelUnavailable, code, status, err)}
	case status == http.StatusTooManyRequests:
		e := m.typed(provider.RateLimited, code, status, err)
		e.RetryAfter = ex.retryAfter
		// An exhausted quota does not come back by waiting.
		return failure{err: e, retryable: code != "insufficient_quota"}
	case status >= 500:
		return failure{err: m.typed(provider.TransportFailed, code, status, err), retryable: true}
	}
	return failure{err: m.typed(provider.InvalidRequest, code, status, err)}
}

// statusOfErrorType gives an in-stream error the status the same error has
// when it comes as a response.
func statusOfErrorType(typ, code string) int {
	switch {
	case code == "rate_limit_exceeded" || typ == "rate_limit_error" || typ == "requests" || typ == "tokens":
		return http.StatusTooManyRequests
	case typ == "authentication_error":
		return http.StatusUnauthorized
	case typ == "invalid_request_error":
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
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
