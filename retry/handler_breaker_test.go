package retry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

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
	// A unit waits for an open breaker only within its max_elapsed, shorter here than the
	// cool-down: it fails at once (TestDoBreakerWaitsForCooldown has the wait).
	req := Request{Policy: Policy{MaxAttempts: 5, MaxElapsed: 10 * time.Minute}, New: get(srv.URL)}
	noop := func(*http.Response) error { return nil }
	ctx, tally := CountRequests(context.Background())

	// A down host fails unit after unit: the first attempts of three units open it. The
	// retries of one unit are one broken request and do not count.
	err := h.Do(ctx, req, noop)
	if ClassOf(err) != dlq.ClassHTTP5xx || hits.Load() != 5 {
		t.Fatalf("first unit: %v after %d hits, want http_5xx after all 5 attempts", err, hits.Load())
	}
	for range 2 {
		_ = h.Do(ctx, req, noop)
	}
	before := hits.Load()
	err = h.Do(ctx, req, noop)
	// Not sent, and dead-lettered with the host's real failure, not the breaker's.
	if NotSent(err) == nil || ClassOf(err) != dlq.ClassHTTP5xx || hits.Load() != before ||
		!strings.Contains(err.Error(), "HTTP 503 Service Unavailable from ") || !strings.Contains(err.Error(), "this unit was not sent") {
		t.Fatalf("after three failed units: %v after %d more hits, want a not-sent http_5xx at once", err, hits.Load()-before)
	}
	clock.Advance(time.Hour)
	healthy.Store(true)
	if err := h.Do(ctx, req, noop); err != nil {
		t.Fatalf("half-open probe: %v", err)
	}
	if err := h.Do(ctx, req, noop); err != nil {
		t.Fatalf("closed again: %v", err)
	}
	if hits.Load() != before+2 {
		t.Errorf("hits = %d, want %d", hits.Load(), before+2)
	}
	// The tally tells what was asked of the host: the requests that reached it, the
	// retries (4 of each of the first two units; the third's first retry met the open
	// breaker) and that the breaker opened once.
	hosts := tally.Hosts()
	if len(hosts) != 1 || hosts[0].Requests != before+2 || hosts[0].Retries != 9 || hosts[0].BreakerOpened != 1 {
		t.Errorf("Hosts() = %+v; want %d requests, 9 retries, opened once", hosts, before+2)
	}
}

// TestDoBreakerWaitsForCooldown: units that meet an open breaker send nothing and wait for
// its cool-down, within their max_elapsed; a host back by then serves them all (a short
// outage of the source pauses a harvest, it does not dead-letter it).
func TestDoBreakerWaitsForCooldown(t *testing.T) {
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
	clock := newFakeClock(false)
	h, _ := newHandler(t, clock, Options{
		Budget:  Budget{Disabled: true},
		Breaker: Breaker{ConsecutiveFailures: 2, Cooldown: 30 * time.Second},
	})
	req := Request{Policy: Policy{MaxAttempts: 1, MaxElapsed: 5 * time.Minute}, New: get(srv.URL)}
	noop := func(*http.Response) error { return nil }
	ctx, tally := CountRequests(context.Background())
	for range 2 { // two units fail: the breaker opens
		if err := h.Do(ctx, req, noop); ClassOf(err) != dlq.ClassHTTP5xx {
			t.Fatalf("unit on a down host: %v", err)
		}
	}
	before := hits.Load()
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- h.Do(ctx, req, noop) }()
	}
	// The three units wait for the cool-down, sending nothing.
	for clock.Waiting() < 3 {
		time.Sleep(time.Millisecond)
	}
	if hits.Load() != before {
		t.Fatalf("%d requests sent while the breaker was open", hits.Load()-before)
	}
	healthy.Store(true)
	for done := 0; done < 3; {
		clock.Advance(time.Second)
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("unit after the cool-down: %v", err)
			}
			done++
		case <-time.After(5 * time.Millisecond):
		}
	}
	if hits.Load() != before+3 {
		t.Errorf("%d requests after the cool-down, want 3", hits.Load()-before)
	}
	// The three units' waits for the cool-down are theirs: about 30 s each.
	if hosts := tally.Hosts(); hosts[0].BreakerOpened != 1 || hosts[0].Waited < 90*time.Second {
		t.Errorf("breaker opened %d times, waits %s; want once, and 3 waits of the 30 s cool-down", hosts[0].BreakerOpened, hosts[0].Waited)
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
