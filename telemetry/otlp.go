package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP exporters here speak the protocol with net/http alone: the
// request is the collector service's Export request (one repeated field of
// resource spans or metrics, encoded with the OTLP data types of
// go.opentelemetry.io/proto/otlp), sent as http/protobuf (a POST to
// /v1/traces) or as gRPC (HTTP/2 to /opentelemetry.proto.collector.*/Export,
// each message behind gRPC's five-byte prefix, the status in the
// trailers). The OpenTelemetry Go exporters link google.golang.org/grpc,
// even over HTTP, and grpc links golang.org/x/net/trace, whose templates
// keep the linker from dropping any exported method anywhere in symbi: 26
// MB more text and twice the memory of `symbi version` for every user,
// whether telemetry is on or not (docs/benchmarks.md).

// The gRPC methods of the OTLP collector services.
const (
	grpcTraceMethod  = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
	grpcMetricMethod = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
)

// otlpClient sends export requests to one collector URL.
type otlpClient struct {
	client  *http.Client
	url     string // the full URL: .../v1/traces, or the base + the gRPC method
	grpc    bool
	headers map[string]string
	timeout time.Duration
	gzip    bool
}

// newOTLPClient is a client for one signal of s: method is the gRPC method
// the signal's Export is (used only over grpc).
func newOTLPClient(s Signal, method string, compression string) (*otlpClient, error) {
	u, err := url.Parse(s.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL with a host", s.Endpoint)
	}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: s.Timeout,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	c := &otlpClient{client: &http.Client{Transport: t}, url: s.Endpoint, headers: s.Headers, timeout: s.Timeout, gzip: compression == "gzip"}
	if s.Protocol == GRPC {
		c.grpc = true
		// gRPC is HTTP/2 only: over TLS as negotiated, over http:// with
		// prior knowledge (h2c), as gRPC clients connect to a collector.
		t.Protocols = new(http.Protocols)
		if u.Scheme == "https" {
			t.Protocols.SetHTTP2(true)
		} else {
			t.Protocols.SetUnencryptedHTTP2(true)
		}
		c.url = strings.TrimSuffix(u.Scheme+"://"+u.Host+strings.TrimSuffix(u.Path, "/"), "/") + method
	}
	return c, nil
}

// export sends one encoded Export request and waits for the collector's
// answer, within the export timeout. A collector that accepted part of it
// (OTLP's partial success) is an error that says how much it rejected.
func (c *otlpClient) export(ctx context.Context, req []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := c.frame(req)
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range c.headers {
		hr.Header.Set(k, v)
	}
	hr.Header.Set("User-Agent", "symbi-otlp")
	if c.grpc {
		hr.Header.Set("Content-Type", "application/grpc+proto")
		hr.Header.Set("TE", "trailers")
		if c.gzip {
			hr.Header.Set("grpc-encoding", "gzip")
		}
	} else {
		hr.Header.Set("Content-Type", "application/x-protobuf")
		if c.gzip {
			hr.Header.Set("Content-Encoding", "gzip")
		}
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if c.grpc {
		return grpcAnswer(resp, answer)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the collector answered %s", resp.Status)
	}
	return partialSuccess(answer)
}

// frame is the request body: the message, gzipped when asked, behind
// gRPC's prefix over grpc.
func (c *otlpClient) frame(msg []byte) ([]byte, error) {
	flag := byte(0)
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(msg); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		msg, flag = b.Bytes(), 1
	}
	if !c.grpc {
		return msg, nil
	}
	out := make([]byte, 5, 5+len(msg))
	out[0] = flag
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...), nil
}

// grpcAnswer reads a gRPC response: its status (in the trailers, or in the
// headers of a trailers-only answer) and its message.
func grpcAnswer(resp *http.Response, body []byte) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the collector answered %s", resp.Status)
	}
	status := resp.Trailer.Get("grpc-status")
	msg := resp.Trailer.Get("grpc-message")
	if status == "" {
		status, msg = resp.Header.Get("grpc-status"), resp.Header.Get("grpc-message")
	}
	if status == "" {
		return errors.New("the collector's answer has no grpc-status")
	}
	if status != "0" {
		code, _ := strconv.Atoi(status)
		m, _ := url.PathUnescape(msg)
		return fmt.Errorf("the collector answered gRPC status %d (%s): %s", code, grpcCodeName(code), m)
	}
	if len(body) < 5 {
		return nil // no message: nothing rejected
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if body[0] != 0 || int(n) > len(body)-5 {
		return nil // compressed or cut: the status said OK
	}
	return partialSuccess(body[5 : 5+n])
}

func grpcCodeName(code int) string {
	names := []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
		"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
		"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}
	if code >= 0 && code < len(names) {
		return names[code]
	}
	return "code " + strconv.Itoa(code)
}

// partialSuccess reads an Export response: field 1 is partial_success,
// whose field 1 counts what was rejected and field 2 says why. The traces'
// and the metrics' responses have the same shape.
func partialSuccess(b []byte) error {
	ps := field(b, 1)
	if ps == nil {
		return nil
	}
	var rejected uint64
	var why string
	for len(ps) > 0 {
		num, typ, n := protowire.ConsumeTag(ps)
		if n < 0 {
			return nil
		}
		ps = ps[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(ps)
			if m < 0 {
				return nil
			}
			rejected, ps = v, ps[m:]
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(ps)
			if m < 0 {
				return nil
			}
			why, ps = string(v), ps[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, ps)
			if m < 0 {
				return nil
			}
			ps = ps[m:]
		}
	}
	if rejected == 0 && why == "" {
		return nil
	}
	return fmt.Errorf("the collector rejected %d item(s): %s", rejected, why)
}

// field is the bytes of the first length-delimited field num of a message.
func field(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		n, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			return nil
		}
		b = b[m:]
		if n == num && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			return v
		}
		k := protowire.ConsumeFieldValue(n, typ, b)
		if k < 0 {
			return nil
		}
		b = b[k:]
	}
	return nil
}
