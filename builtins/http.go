package builtins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// maxErrorBody bounds how much of a failed response's body goes into the
// error message.
const maxErrorBody = 512

func (tb *Toolbox) httpRun(h plan.HTTPExec) runFunc {
	method := strings.ToUpper(h.Method)
	if method == "" {
		method = http.MethodPost
	}
	return func(ctx context.Context, args json.RawMessage, limit int) (string, bool, error) {
		raw, err := tb.resolve(h.URL)
		if err != nil {
			return "", false, fail(Error, "", err)
		}
		u, err := url.Parse(raw)
		if err != nil {
			// The URL's text stays out of the message: it may hold a resolved secret.
			return "", false, fail(Error, "", errors.New("url: not a valid URL"))
		}
		var body *bytes.Reader
		if method == http.MethodGet || method == http.MethodDelete || method == http.MethodHead {
			// No body on these methods: the top-level arguments become the query.
			q := u.Query()
			var m map[string]any
			if len(args) > 0 {
				if err := json.Unmarshal(args, &m); err != nil {
					return "", false, fail(InvalidArguments, "", err)
				}
			}
			for k, v := range m {
				switch v := v.(type) {
				case string:
					q.Set(k, v)
				default:
					b, _ := json.Marshal(v)
					q.Set(k, string(b))
				}
			}
			u.RawQuery = q.Encode()
			body = bytes.NewReader(nil)
		} else {
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			body = bytes.NewReader(args)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
		if err != nil {
			return "", false, fail(Error, "", redact(err))
		}
		if body.Len() > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
		if key := idempotencyKeyOf(ctx); key != "" {
			// Before the block's headers: one the author wrote wins.
			req.Header.Set(IdempotencyHeader, key)
		}
		for k, v := range h.Headers {
			val, err := tb.resolve(v)
			if err != nil {
				return "", false, fail(Error, "", fmt.Errorf("header %s: %w", k, err))
			}
			req.Header.Set(k, val)
		}
		return doHTTP(ctx, tb.opts.HTTPClient, req, limit)
	}
}

// doHTTP sends req and maps the answer: 2xx is the result (body capped at
// limit), 429 rate_limited with Retry-After noted, 408 and 504 timeout, other
// 5xx transport, other statuses error; a connection failure is transport.
func doHTTP(ctx context.Context, client *http.Client, req *http.Request, limit int) (string, bool, error) {
	resp, err := client.Do(req)
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return "", false, f // a redirect refused by the allow-list
		}
		if ctx.Err() != nil {
			return "", false, fail(Timeout, "", err)
		}
		return "", false, fail(Transport, "", redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		content, truncated, err := readCapped(resp.Body, limit)
		if err != nil && ctx.Err() != nil {
			return "", false, fail(Timeout, "", ctx.Err())
		}
		if err != nil {
			return "", false, fail(Transport, "", err)
		}
		return content, truncated, nil
	}
	snippet, _, _ := readCapped(resp.Body, maxErrorBody)
	se := &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(snippet)}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		return "", false, &Failure{Kind: RateLimited, Err: se, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout:
		return "", false, fail(Timeout, "", se)
	case code >= 500:
		return "", false, fail(Transport, "", se)
	default:
		return "", false, fail(Error, "", se)
	}
}

// redact drops the URL from a transport error: it may carry a resolved
// secret in its query.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// maxRetryAfter caps a Retry-After header, in either form, so a hostile
// header cannot overflow the duration into a negative or near-endless wait.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(min(s, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}
