package builtins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// maxErrorBody bounds how much of a failed response's body goes into the
// error message.
const maxErrorBody = 512

// queryMethod reports whether a method sends no body, so that a call's
// top-level arguments become query parameters.
func queryMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodDelete || method == http.MethodHead
}

func httpMethod(h plan.HTTPExec) string {
	if h.Method == "" {
		return plan.DefaultHTTPMethod
	}
	return strings.ToUpper(h.Method)
}

func (tb *Toolbox) httpRun(h plan.HTTPExec) runFunc {
	method := httpMethod(h)
	return func(ctx context.Context, args json.RawMessage, limit int) (string, cut, error) {
		u, err := tb.httpURL(h)
		if err != nil {
			return "", cut{}, fail(Error, "", err)
		}
		var body *bytes.Reader
		if queryMethod(method) {
			// The configured query is sent byte for byte as written, and the
			// arguments are added after it; none may name a fixed parameter.
			extra, err := argumentQuery(args, fixedQueryNames(u.RawQuery))
			if err != nil {
				return "", cut{}, fail(InvalidArguments, "", err)
			}
			switch {
			case u.RawQuery == "":
				u.RawQuery = extra
			case extra != "":
				u.RawQuery += "&" + extra
			}
			body = bytes.NewReader(nil)
		} else {
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			body = bytes.NewReader(args)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
		if err != nil {
			return "", cut{}, fail(Error, "", redact(err))
		}
		if body.Len() > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
		if key := idempotencyKeyOf(ctx); key != "" {
			// Before the block's headers: one the author wrote wins.
			req.Header.Set(IdempotencyHeader, key)
		}
		for k, v := range traceContext(ctx) {
			req.Header.Set(k, v)
		}
		for k, v := range h.Headers {
			val, err := tb.resolve(v)
			if err != nil {
				return "", cut{}, fail(Error, "", fmt.Errorf("header %s: %w", k, err))
			}
			req.Header.Set(k, val)
		}
		return doHTTP(ctx, tb.opts.HTTPClient, req, limit)
	}
}

// httpURL is the tool's configured URL, resolved and parsed.
func (tb *Toolbox) httpURL(h plan.HTTPExec) (*url.URL, error) {
	raw, err := tb.resolveURL(h.URL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The URL's text stays out of the message: it may hold a resolved secret.
		return nil, errors.New("url: not a valid URL")
	}
	return u, nil
}

// httpCheck refuses, before the gate, the arguments of a query-method call
// that name a parameter the URL fixes, so no policy is asked about (and no
// person approves) a call that could not run as proposed. A URL that does
// not resolve is left for the call to report.
func (tb *Toolbox) httpCheck(h plan.HTTPExec) func(json.RawMessage) error {
	if !queryMethod(httpMethod(h)) {
		return nil
	}
	return func(args json.RawMessage) error {
		u, err := tb.httpURL(h)
		if err != nil {
			return nil
		}
		_, err = argumentQuery(args, fixedQueryNames(u.RawQuery))
		return err
	}
}

// paramName is the name a server may take a query parameter for: without
// surrounding spaces, letter case or an array suffix ("user[]", "user[0]"),
// which frameworks such as PHP, Rails or ASP.NET read as the same parameter.
func paramName(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	if i := strings.IndexByte(k, '['); i > 0 {
		k = k[:i]
	}
	return k
}

// fixedQueryNames are the names of the parameters a configured query
// fixes, as paramName gives them. Pairs are split at & and ; alike, and a
// name that does not decode is taken as written.
func fixedQueryNames(rawQuery string) []string {
	var out []string
	for _, pair := range strings.FieldsFunc(rawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, _ := strings.Cut(pair, "=")
		if dec, err := url.QueryUnescape(name); err == nil {
			name = dec
		}
		out = append(out, paramName(name))
	}
	return out
}

// argumentQuery encodes a call's top-level arguments as query parameters
// (a string as it is, anything else as its JSON text), refusing any whose
// name is one the URL fixes: the model's arguments can add parameters,
// never replace or double the configured ones.
func argumentQuery(args json.RawMessage, fixed []string) (string, error) {
	var m map[string]any
	if len(bytes.TrimSpace(args)) > 0 {
		// Numbers keep their text: the server gets the digits the gate saw.
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return "", err
		}
	}
	q := url.Values{}
	for k, v := range m {
		if slices.Contains(fixed, paramName(k)) {
			return "", fmt.Errorf("argument %q would set the query parameter %q, which the tool's URL fixes; arguments can add query parameters, never replace fixed ones", k, paramName(k))
		}
		switch v := v.(type) {
		case string:
			q.Set(k, v)
		default:
			b, _ := json.Marshal(v)
			q.Set(k, string(b))
		}
	}
	return q.Encode(), nil
}

// doHTTP sends req and maps the answer: 2xx is the result (body capped at
// limit), 429 rate_limited with Retry-After noted, 408 and 504 timeout, other
// 5xx transport, other statuses error; a connection failure is transport.
func doHTTP(ctx context.Context, client *http.Client, req *http.Request, limit int) (string, cut, error) {
	resp, err := client.Do(req)
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return "", cut{}, f // a redirect refused by the allow-list
		}
		if ctx.Err() != nil {
			return "", cut{}, fail(Timeout, "", err)
		}
		return "", cut{}, fail(Transport, "", redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		content, c, err := readCapped(resp.Body, limit, max(resp.ContentLength, 0))
		if err != nil && ctx.Err() != nil {
			return "", cut{}, fail(Timeout, "", ctx.Err())
		}
		if err != nil {
			return "", cut{}, fail(Transport, "", err)
		}
		return content, c, nil
	}
	snippet, _, _ := readCapped(resp.Body, maxErrorBody, 0)
	se := &StatusError{Code: resp.StatusCode, Body: strings.TrimSpace(snippet)}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		return "", cut{}, &Failure{Kind: RateLimited, Err: se, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout:
		return "", cut{}, fail(Timeout, "", se)
	case code >= 500:
		return "", cut{}, fail(Transport, "", se)
	default:
		return "", cut{}, fail(Error, "", se)
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
