package retry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

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
