package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/prometheus/client_golang/prometheus"
)

func TestDoClassification(t *testing.T) {
	ok := status(200, "ok")
	tests := []struct {
		name      string
		steps     []http.HandlerFunc
		method    string
		idem      bool
		accept    []int
		read      func(*http.Response) error
		wantClass dlq.Class
		wantHits  int64
		wantCode  int
	}{
		{name: "200 at once", steps: []http.HandlerFunc{ok}, wantHits: 1},
		{name: "408 retried", steps: []http.HandlerFunc{status(408, ""), ok}, wantHits: 2},
		{name: "425 retried", steps: []http.HandlerFunc{status(425, ""), ok}, wantHits: 2},
		{name: "429 retried", steps: []http.HandlerFunc{status(429, ""), ok}, wantHits: 2},
		{name: "500 retried", steps: []http.HandlerFunc{status(500, ""), ok}, wantHits: 2},
		{name: "502 retried", steps: []http.HandlerFunc{status(502, ""), ok}, wantHits: 2},
		{name: "503 retried", steps: []http.HandlerFunc{status(503, ""), ok}, wantHits: 2},
		{name: "504 retried", steps: []http.HandlerFunc{status(504, ""), ok}, wantHits: 2},
		{name: "truncated body retried", steps: []http.HandlerFunc{truncated, ok}, wantHits: 2},
		{name: "400 fails at once", steps: []http.HandlerFunc{status(400, "bad bbox")}, wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 400},
		{name: "401 fails at once", steps: []http.HandlerFunc{status(401, "")}, wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 401},
		{name: "403 fails at once", steps: []http.HandlerFunc{status(403, "")}, wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 403},
		{name: "404 fails at once", steps: []http.HandlerFunc{status(404, "")}, wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 404},
		{name: "422 fails at once", steps: []http.HandlerFunc{status(422, "")}, wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 422},
		{name: "418 fails at once", steps: []http.HandlerFunc{status(418, "")}, wantClass: dlq.ClassHTTP4xx, wantHits: 1, wantCode: 418},
		{name: "501 is permanent", steps: []http.HandlerFunc{status(501, "")}, wantClass: dlq.ClassHTTP5xx, wantHits: 1, wantCode: 501},
		{name: "404 accepted", steps: []http.HandlerFunc{status(404, "")}, accept: []int{404}, wantHits: 1},
		{name: "503 forever gives up", steps: []http.HandlerFunc{status(503, "down")}, wantClass: dlq.ClassHTTP5xx, wantHits: 3, wantCode: 503},
		{name: "POST not retried", method: http.MethodPost, steps: []http.HandlerFunc{status(503, ""), ok}, wantClass: dlq.ClassHTTP5xx, wantHits: 1, wantCode: 503},
		{name: "idempotent POST retried", method: http.MethodPost, idem: true, steps: []http.HandlerFunc{status(503, ""), ok}, wantHits: 2},
		{name: "POST truncated not retried", method: http.MethodPost, steps: []http.HandlerFunc{truncated, ok}, wantClass: dlq.ClassTruncated, wantHits: 1, wantCode: 200},
		{name: "read permanent keeps class", steps: []http.HandlerFunc{ok},
			read: func(*http.Response) error {
				return Permanent(dlq.ClassExceptionReport, errors.New("InvalidParameterValue"))
			},
			wantClass: dlq.ClassExceptionReport, wantHits: 1, wantCode: 200},
		{name: "read transient retried", steps: []http.HandlerFunc{ok},
			read:      func(*http.Response) error { return Transient(dlq.ClassParse, errors.New("garbage at end")) },
			wantClass: dlq.ClassParse, wantHits: 3, wantCode: 200},
		{name: "read wrapped unexpected EOF is truncated", steps: []http.HandlerFunc{ok},
			read:      func(*http.Response) error { return fmt.Errorf("decoding page: %w", io.ErrUnexpectedEOF) },
			wantClass: dlq.ClassTruncated, wantHits: 3, wantCode: 200},
		{name: "read other error is parse", steps: []http.HandlerFunc{ok},
			read: func(*http.Response) error { return errors.New("unexpected element") }, wantClass: dlq.ClassParse, wantHits: 1, wantCode: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: tt.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			clock := newFakeClock(true)
			h, _ := newHandler(t, clock, Options{})
			method := cmpOr(tt.method, http.MethodGet)
			var body []byte
			read := tt.read
			if read == nil {
				read = readAll(&body)
			}
			err := h.Do(context.Background(), Request{
				Unit:         "u1",
				Policy:       Policy{MaxAttempts: 3},
				Idempotent:   tt.idem,
				AcceptStatus: tt.accept,
				New: func(ctx context.Context) (*http.Request, error) {
					return http.NewRequestWithContext(ctx, method, srv.URL+"/wfs", strings.NewReader(""))
				},
			}, read)
			if got := ClassOf(err); got != tt.wantClass {
				t.Errorf("class = %q, want %q (err %v)", got, tt.wantClass, err)
			}
			if got := s.hits.Load(); got != tt.wantHits {
				t.Errorf("server hits = %d, want %d", got, tt.wantHits)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("Do returned %T, want *Error", err)
				}
				if e.Status != tt.wantCode {
					t.Errorf("status = %d, want %d", e.Status, tt.wantCode)
				}
				if e.Attempts != int(tt.wantHits) {
					t.Errorf("attempts = %d, want %d", e.Attempts, tt.wantHits)
				}
			}
		})
	}
}

func TestDoTruncatedPageFetchedWhole(t *testing.T) {
	full := `{"type":"FeatureCollection","features":[]}`
	s := &script{steps: []http.HandlerFunc{truncated, status(200, full)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h, logs := newHandler(t, newFakeClock(true), Options{})
	var pages []string
	err := h.Do(context.Background(), Request{Unit: "tile 3/4/5", New: get(srv.URL)}, func(resp *http.Response) error {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		pages = append(pages, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 1 || pages[0] != full {
		t.Errorf("pages delivered = %q, want only the whole page", pages)
	}
	if !strings.Contains(logs.String(), "reason=truncated") || !strings.Contains(logs.String(), `unit="tile 3/4/5"`) {
		t.Errorf("no retry log line with reason and unit:\n%s", logs)
	}
}

func TestDoRefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	clock := newFakeClock(true)
	h, _ := newHandler(t, clock, Options{})
	err = h.Do(context.Background(), Request{Policy: Policy{MaxAttempts: 3}, New: get("http://" + addr + "/x")},
		func(*http.Response) error { return nil })
	var e *Error
	if !errors.As(err, &e) || e.Class != dlq.ClassNetwork || e.Attempts != 3 {
		t.Fatalf("err = %v, want network after 3 attempts", err)
	}
	if n := len(clock.Sleeps()); n != 2 {
		t.Errorf("backoff sleeps = %d, want 2", n)
	}
}

func TestDoServerMessageRedacted(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(403)
		fmt.Fprintf(w, "Forbidden: key %s is not valid for %s\n<more>", r.URL.Query().Get("apikey"), r.URL)
	}}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h, _ := newHandler(t, newFakeClock(true), Options{})
	err := h.Do(context.Background(), Request{New: get(srv.URL + "/tiles?apikey=S3CR3TKEY&z=1")}, func(*http.Response) error { return nil })
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "S3CR3TKEY") || strings.Contains(e.Snippet, "S3CR3TKEY") || strings.Contains(e.URL, "S3CR3TKEY") {
		t.Errorf("secret leaked: %v / snippet %q / url %q", err, e.Snippet, e.URL)
	}
	if !strings.Contains(e.Message, "Forbidden: key REDACTED is not valid") {
		t.Errorf("message = %q, want the server's message", e.Message)
	}
}

func TestMetrics(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{status(503, "", "Retry-After", "1"), status(200, "", "X-RateLimit-Remaining", "5")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	reg := prometheus.NewRegistry()
	h, _ := newHandler(t, newFakeClock(true), Options{Registerer: reg})
	if err := h.Do(context.Background(), Request{New: get(srv.URL)}, func(*http.Response) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A second Handler on the same registry shares the collectors.
	_ = New(&Options{Registerer: reg})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, name := range []string{"geoflow_http_requests_total", "geoflow_http_retries_total", "geoflow_http_backoff_seconds",
		"geoflow_http_ratelimit_headers_total", "geoflow_http_pace_requests_per_second", "geoflow_http_breaker_state", "geoflow_http_retry_budget_tokens"} {
		if !seen[name] {
			t.Errorf("metric %s not registered", name)
		}
	}
}

func TestDoInvalid(t *testing.T) {
	h := New(nil)
	tests := []struct {
		name string
		req  Request
	}{
		{name: "no New", req: Request{}},
		{name: "bad jitter", req: Request{Policy: Policy{Jitter: "wild"}, New: get("http://127.0.0.1:1/")}},
		{name: "New fails", req: Request{New: func(context.Context) (*http.Request, error) { return nil, errors.New("no url") }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.Do(context.Background(), tt.req, func(*http.Response) error { return nil })
			if ClassOf(err) != dlq.ClassInvalid {
				t.Errorf("err = %v, want invalid_request", err)
			}
		})
	}
}
