package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/prometheus/client_golang/prometheus"
)

// script is a fixture that answers each request with the next step of a
// script and repeats the last step when the script runs out.
type script struct {
	mu    sync.Mutex
	steps []http.HandlerFunc
	hits  atomic.Int64
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.hits.Add(1)) - 1
	s.mu.Lock()
	step := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	step(w, r)
}

func status(code int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// truncated promises a long body, sends a part of it and drops the
// connection, as a proxy or a crashing server does.
func truncated(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "1000")
	w.WriteHeader(200)
	io.WriteString(w, `{"type":"FeatureCollection","features":[`)
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

func newHandler(t *testing.T, clock Clock, opts Options) (*Handler, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	opts.Clock = clock
	opts.Seed = 1
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}
	return New(&opts), &logs
}

func get(url string) func(ctx context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	}
}

func readAll(dst *[]byte) func(*http.Response) error {
	return func(resp *http.Response) error {
		b, err := io.ReadAll(resp.Body)
		*dst = b
		return err
	}
}

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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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

func TestDoRetryAfter(t *testing.T) {
	tests := []struct {
		name     string
		header   string
		value    string
		wantMin  time.Duration
		wantMax  time.Duration
		wantLogs string
	}{
		{name: "delay seconds", header: "Retry-After", value: "7", wantMin: 7 * time.Second, wantMax: 7700 * time.Millisecond},
		{name: "milliseconds by magnitude", header: "Retry-After", value: "150000", wantMin: 150 * time.Second, wantMax: 165 * time.Second},
		{name: "retry-after-ms", header: "Retry-After-Ms", value: "1200", wantMin: 1200 * time.Millisecond, wantMax: 1320 * time.Millisecond},
		{name: "capped", header: "Retry-After", value: "99999", wantMin: 10 * time.Minute, wantMax: 10 * time.Minute, wantLogs: "capped"},
		{name: "garbage ignored", header: "Retry-After", value: "soon", wantMin: 0, wantMax: 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: []http.HandlerFunc{status(429, "slow down", tt.header, tt.value), status(200, "")}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			clock := newFakeClock(true)
			h, logs := newHandler(t, clock, Options{})
			err := h.Do(context.Background(), Request{Policy: Policy{MaxServerDelay: 10 * time.Minute, MaxElapsed: time.Hour}, New: get(srv.URL)},
				func(*http.Response) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			sleeps := clock.Sleeps()
			if len(sleeps) == 0 {
				t.Fatal("no wait before the retry")
			}
			if d := sleeps[0]; d < tt.wantMin || d > tt.wantMax {
				t.Errorf("waited %v, want in [%v, %v]", d, tt.wantMin, tt.wantMax)
			}
			if tt.wantLogs != "" && !strings.Contains(logs.String(), tt.wantLogs) {
				t.Errorf("logs lack %q:\n%s", tt.wantLogs, logs)
			}
		})
	}
}

func TestDoQuotaResetHint(t *testing.T) {
	// A 429 without Retry-After but with a spent quota waits for the reset.
	s := &script{steps: []http.HandlerFunc{
		status(429, "", "X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "4"),
		status(200, ""),
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	clock := newFakeClock(true)
	h, _ := newHandler(t, clock, Options{})
	if err := h.Do(context.Background(), Request{New: get(srv.URL)}, func(*http.Response) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, d := range clock.Sleeps() {
		total += d
	}
	if total < 4*time.Second || total > 5*time.Second {
		t.Errorf("waited %v in all (%v), want the 4s to the reset", total, clock.Sleeps())
	}
}

func TestDoBudgetExhausted(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{status(503, "")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h, _ := newHandler(t, newFakeClock(true), Options{Budget: Budget{Tokens: 10}, Breaker: Breaker{Disabled: true}})
	err := h.Do(context.Background(), Request{Policy: Policy{MaxAttempts: 10}, New: get(srv.URL)}, func(*http.Response) error { return nil })
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "budget") {
		t.Fatalf("err = %v, want budget exhausted", err)
	}
	if e.Attempts != 3 || s.hits.Load() != 3 {
		t.Errorf("attempts = %d, hits = %d; want 3 (two retries of cost 5 from 10 tokens)", e.Attempts, s.hits.Load())
	}
	// A second unit gets no retry at all.
	err = h.Do(context.Background(), Request{Policy: Policy{MaxAttempts: 10}, New: get(srv.URL)}, func(*http.Response) error { return nil })
	if !errors.As(err, &e) || e.Attempts != 1 {
		t.Errorf("second unit: %v, want 1 attempt", err)
	}
}

func TestDoBudgetRefund(t *testing.T) {
	s := &script{steps: []http.HandlerFunc{status(503, ""), status(200, "")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h, _ := newHandler(t, newFakeClock(true), Options{Budget: Budget{Tokens: 5}})
	for i := range 3 {
		s.hits.Store(0)
		if err := h.Do(context.Background(), Request{New: get(srv.URL)}, func(*http.Response) error { return nil }); err != nil {
			t.Fatalf("unit %d: %v (a success after a retry must refund its cost)", i, err)
		}
	}
}

func TestDoCircuitBreaker(t *testing.T) {
	var healthy atomic.Bool
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if healthy.Load() {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(503)
	}))
	defer srv.Close()
	clock := newFakeClock(true)
	h, _ := newHandler(t, clock, Options{
		Budget:  Budget{Disabled: true},
		Breaker: Breaker{ConsecutiveFailures: 3, Cooldown: time.Hour},
	})
	req := Request{Policy: Policy{MaxAttempts: 5, MaxElapsed: 10 * time.Hour}, New: get(srv.URL)}
	noop := func(*http.Response) error { return nil }

	// A down host fails unit after unit: the first attempts of three units open it. The
	// retries of one unit are one broken request and do not count.
	err := h.Do(context.Background(), req, noop)
	if ClassOf(err) != dlq.ClassHTTP5xx || hits.Load() != 5 {
		t.Fatalf("first unit: %v after %d hits, want http_5xx after all 5 attempts", err, hits.Load())
	}
	for range 2 {
		_ = h.Do(context.Background(), req, noop)
	}
	before := hits.Load()
	err = h.Do(context.Background(), req, noop)
	if ClassOf(err) != dlq.ClassCircuitOpen || hits.Load() != before {
		t.Fatalf("after three failed units: %v after %d more hits, want circuit_open at once", err, hits.Load()-before)
	}
	clock.Advance(time.Hour)
	healthy.Store(true)
	if err := h.Do(context.Background(), req, noop); err != nil {
		t.Fatalf("half-open probe: %v", err)
	}
	if err := h.Do(context.Background(), req, noop); err != nil {
		t.Fatalf("closed again: %v", err)
	}
	if hits.Load() != before+2 {
		t.Errorf("hits = %d, want %d", hits.Load(), before+2)
	}
}

// TestBreakerOneBrokenURL: one URL failing forever among healthy ones must not open the
// breaker for the others, however often it is retried.
func TestBreakerOneBrokenURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(200)
	}))
	defer srv.Close()
	h, _ := newHandler(t, newFakeClock(true), Options{Budget: Budget{Disabled: true}, Breaker: Breaker{ConsecutiveFailures: 3}})
	noop := func(*http.Response) error { return nil }
	for i := range 20 {
		path := "/ok"
		if i%5 == 0 {
			path = "/broken"
		}
		err := h.Do(context.Background(), Request{Policy: Policy{MaxAttempts: 6, MaxElapsed: time.Hour}, New: get(srv.URL + path)}, noop)
		switch {
		case path == "/ok" && err != nil:
			t.Fatalf("unit %d (healthy URL): %v", i, err)
		case path == "/broken" && ClassOf(err) != dlq.ClassHTTP5xx:
			t.Fatalf("unit %d (broken URL): %v, want http_5xx", i, err)
		}
	}
}

func TestBreakerRatio(t *testing.T) {
	b := breaker{cfg: Breaker{ConsecutiveFailures: 100, FailureRatio: 0.5, Window: 4, Cooldown: time.Second, HalfOpenProbes: 1}.withDefaults(), ring: make([]bool, 4)}
	now := testNow
	for _, fail := range []bool{true, false, true, false} {
		b.record(now, fail, false)
	}
	if b.state != stateOpen {
		t.Fatalf("state = %d, want open at 50%% failures", b.state)
	}
	if ok, _ := b.allow(now.Add(500 * time.Millisecond)); ok {
		t.Error("allowed during cool-down")
	}
	ok, probe := b.allow(now.Add(time.Second))
	if !ok || !probe {
		t.Fatal("no half-open probe after cool-down")
	}
	if ok, _ := b.allow(now.Add(time.Second)); ok {
		t.Error("second concurrent probe allowed")
	}
	b.record(now.Add(time.Second), true, true)
	if b.state != stateOpen {
		t.Error("failed probe did not reopen")
	}
}

func TestDoCancelEndsWaits(t *testing.T) {
	tests := []struct {
		name  string
		steps []http.HandlerFunc
	}{
		{name: "during backoff", steps: []http.HandlerFunc{status(503, "")}},
		{name: "during retry-after", steps: []http.HandlerFunc{status(429, "", "Retry-After", "3600")}},
		{name: "during quota wait", steps: []http.HandlerFunc{status(429, "", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "600")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{steps: tt.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			clock := newFakeClock(false) // waits never end by themselves
			h, _ := newHandler(t, clock, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- h.Do(ctx, Request{Policy: Policy{MaxServerDelay: time.Hour, MaxElapsed: 2 * time.Hour}, New: get(srv.URL)},
					func(*http.Response) error { return nil })
			}()
			for clock.Waiting() == 0 {
				select {
				case err := <-done:
					t.Fatalf("Do returned before waiting: %v", err)
				case <-time.After(time.Millisecond):
				}
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || ClassOf(err) != dlq.ClassCanceled {
					t.Errorf("err = %v (class %q), want context.Canceled", err, ClassOf(err))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Do did not return after cancel")
			}
		})
	}
}

func TestDoCancelIsNotAHostFailure(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	h, _ := newHandler(t, newFakeClock(true), Options{Breaker: Breaker{ConsecutiveFailures: 1}})
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(5 * time.Millisecond); cancel() }()
		err := h.Do(ctx, Request{New: get(srv.URL)}, func(*http.Response) error { return nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
	}
	hs := h.host(hostKey(mustURL(t, srv.URL)), RateLimit{})
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.breaker.state != stateClosed || hs.budget.tokens != 500 {
		t.Errorf("breaker %d, budget %d: cancellation was held against the host", hs.breaker.state, hs.budget.tokens)
	}
}

func TestDoConcurrencyLimit(t *testing.T) {
	var inFlight, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		inFlight.Add(-1)
	}))
	defer srv.Close()
	h, _ := newHandler(t, realClock{}, Options{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_ = h.Do(context.Background(), Request{RateLimit: RateLimit{Concurrency: 2}, New: get(srv.URL)}, func(*http.Response) error { return nil })
		})
	}
	wg.Wait()
	if peak.Load() > 2 {
		t.Errorf("peak in flight = %d, want <= 2", peak.Load())
	}
}

func TestDoConfiguredRate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	clock := newFakeClock(true)
	h, _ := newHandler(t, clock, Options{})
	start := clock.Now()
	for range 5 {
		if err := h.Do(context.Background(), Request{RateLimit: RateLimit{RequestsPerSecond: 2, Burst: 1}, New: get(srv.URL)},
			func(*http.Response) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := clock.Now().Sub(start); got < 2*time.Second {
		t.Errorf("5 requests at 2/s took %v of fake time, want >= 2s", got)
	}
}

// quotaServer enforces a fixed-window quota and reports it in headers.
type quotaServer struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	start   time.Time
	count   int
	idx     int64
	form    string
	ok, tmr atomic.Int64
}

func (q *quotaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	now := time.Now()
	idx := int64(now.Sub(q.start) / q.window)
	if idx != q.idx {
		q.idx, q.count = idx, 0
	}
	reset := q.start.Add(time.Duration(idx+1) * q.window)
	q.count++
	over := q.count > q.limit
	remaining := max(q.limit-q.count, 0)
	q.mu.Unlock()
	switch q.form {
	case "x-ratelimit epoch ms":
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(q.limit))
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.UnixMilli(), 10))
	case "x-ratelimit reset-after":
		w.Header().Set("X-RateLimit-Limit", strconv.Itoa(q.limit))
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		w.Header().Set("X-RateLimit-Reset-After", strconv.FormatFloat(reset.Sub(now).Seconds(), 'f', 3, 64))
	case "ietf triple":
		w.Header().Set("RateLimit-Limit", strconv.Itoa(q.limit))
		w.Header().Set("RateLimit-Remaining", strconv.Itoa(remaining))
		w.Header().Set("RateLimit-Reset", strconv.FormatFloat(reset.Sub(now).Seconds(), 'f', 3, 64))
	}
	if over {
		q.tmr.Add(1)
		w.WriteHeader(429)
		return
	}
	q.ok.Add(1)
}

func TestPacingAheadOfQuota(t *testing.T) {
	for _, form := range []string{"x-ratelimit epoch ms", "x-ratelimit reset-after", "ietf triple"} {
		t.Run(form, func(t *testing.T) {
			q := &quotaServer{limit: 10, window: 200 * time.Millisecond, start: time.Now(), form: form}
			srv := httptest.NewServer(q)
			defer srv.Close()
			h, _ := newHandler(t, realClock{}, Options{})
			var wg sync.WaitGroup
			var failed atomic.Int64
			units := make(chan int, 60)
			for i := range 60 {
				units <- i
			}
			close(units)
			for range 4 {
				wg.Go(func() {
					for range units {
						if err := h.Do(context.Background(), Request{New: get(srv.URL)}, func(*http.Response) error { return nil }); err != nil {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d answered, %d of them 429", q.ok.Load()+q.tmr.Load(), q.tmr.Load())
			if failed.Load() != 0 {
				t.Errorf("%d units lost", failed.Load())
			}
			// Without pacing, 4 workers on loopback get hundreds of 429s here.
			if n := q.tmr.Load(); n > 3 {
				t.Errorf("%d of %d requests answered 429, want near zero", n, n+q.ok.Load())
			}
		})
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

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
