package anthropic

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

	"github.com/symbi-dev/symbi/provider"
)

// Causes of an attempt's cancellation, told apart with context.Cause.
var (
	errTotalTimeout      = errors.New("total timeout")
	errFirstEventTimeout = errors.New("first_event timeout")
	errIdleTimeout       = errors.New("idle timeout")
)

// errTruncated is a stream that ended before message_stop.
var errTruncated = errors.New("the stream ended before message_stop")

// failure is a classified error and whether another attempt may cure it.
type failure struct {
	err       error // a *provider.Error, or the caller's ctx.Err()
	retryable bool
}

// classify turns what the transport, the body or the stream returned into a typed
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
		// Whatever became of a body cut off at its bound.
		return failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, ex.over)}
	}
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errFirstEventTimeout):
		return failure{err: m.typed(provider.Timeout, "first_event", 0, fmt.Errorf("no event within %s", m.cfg.Timeouts.FirstEvent))}
	case errors.Is(cause, errIdleTimeout):
		return failure{err: m.typed(provider.Timeout, "idle", 0, fmt.Errorf("no event for %s", m.cfg.Timeouts.Idle))}
	}
	var cte *connectTimeoutError
	if ex.connectTimeout.Load() || errors.As(err, &cte) {
		return failure{err: m.typed(provider.Timeout, "connect", 0, fmt.Errorf("no connection within %s", m.cfg.Timeouts.Connect))}
	}
	var apiErr *apiError
	if errors.As(err, &apiErr) {
		return m.fromAPIError(apiErr, ex)
	}

	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errTooLarge):
		// The stream reader's own bound on an event.
		return failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, err)}
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, errMalformed):
		return failure{err: m.typed(provider.MalformedResponse, "", ex.status, err)}
	case isPermanentConnectionError(err):
		// Another attempt meets the same certificate or the same missing host.
		return failure{err: m.typed(provider.TransportFailed, "", 0, err)}
	case errors.Is(err, errTruncated), errors.Is(err, io.ErrUnexpectedEOF) && ex.status != 0:
		// An unexpected EOF after the response began is a body cut short.
		return failure{err: m.typed(provider.TransportFailed, "truncated", ex.status, err), retryable: true}
	case isConnectionError(err):
		return failure{err: m.typed(provider.TransportFailed, "", ex.status, err), retryable: true}
	case !ex.sent:
		// The request could not be made (a base URL the HTTP client refuses, say).
		return failure{err: m.typed(provider.InvalidRequest, "", 0, err)}
	}
	return failure{err: m.typed(provider.TransportFailed, "", ex.status, err)}
}

// errMalformed is a response or event that does not make a turn (data that
// is not JSON, a delta for a block that never started, say).
var errMalformed = errors.New("malformed response")

// fromAPIError classifies an error the API sent: as a response (its
// status on the wire) or inside a stream ("event: error" after a 200; it is
// reported with no status, since the error had none of its own). The
// error's type decides, the status only when the type is unknown, so one
// error is one kind on both paths.
func (m *Model) fromAPIError(e *apiError, ex *exchange) failure {
	status := e.StatusCode
	if status < http.StatusBadRequest {
		status = 0
	}
	typ := e.Type
	msg := e.Message
	if msg == "" {
		msg = snippet(e.Raw)
	}
	err := errors.New(msg)
	retryAfter := time.Duration(0)
	if status != 0 {
		retryAfter = ex.retryAfter
	}
	kind, retryable := kindOfType(typ)
	if kind == "" {
		kind, retryable = kindOfStatus(status)
	}
	pe := m.typed(kind, typ, status, err)
	if kind == provider.RateLimited {
		pe.RetryAfter = retryAfter
	}
	return failure{err: pe, retryable: retryable}
}

// kindOfType maps Anthropic's error types to symbi's kinds: "" for a type
// it does not know.
func kindOfType(typ string) (provider.ErrorKind, bool) {
	switch typ {
	case "authentication_error", "permission_error":
		return provider.AuthenticationFailed, false
	case "billing_error":
		// Like OpenAI's insufficient_quota: waiting does not cure it.
		return provider.RateLimited, false
	case "rate_limit_error":
		return provider.RateLimited, true
	case "not_found_error":
		return provider.ModelUnavailable, false
	case "overloaded_error", "api_error", "timeout_error":
		return provider.TransportFailed, true
	case "invalid_request_error", "request_too_large":
		return provider.InvalidRequest, false
	}
	return "", false
}

// kindOfStatus is the kind of an error whose type says nothing; 0 is an
// error inside a stream, which another attempt may cure.
func kindOfStatus(status int) (provider.ErrorKind, bool) {
	switch {
	case status == 0:
		return provider.TransportFailed, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return provider.AuthenticationFailed, false
	case status == http.StatusNotFound:
		return provider.ModelUnavailable, false
	case status == http.StatusTooManyRequests:
		return provider.RateLimited, true
	case status >= 500:
		return provider.TransportFailed, true
	}
	return provider.InvalidRequest, false
}

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

func snippet(body string) string {
	s := strings.TrimSpace(body)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "empty error body"
	}
	return s
}

// parseRetryAfter reads how long the server asked the client to wait:
// retry-after-ms in milliseconds when present, else Retry-After in seconds
// or as an HTTP date. Zero when absent or unreadable.
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
