package retry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

func TestBreakerWaitVerdict(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		deadline   time.Time
		view       breakerView
		rnd        float64
		wantWait   time.Duration
		wantGiveUp bool
	}{
		{name: "cooling down, time left: wait for the cool-down's end", deadline: now.Add(5 * time.Minute),
			view: breakerView{open: true, cooldownLeft: 30 * time.Second}, wantWait: 30 * time.Second},
		{name: "the wake-ups are spread by up to a tenth", deadline: now.Add(5 * time.Minute),
			view: breakerView{open: true, cooldownLeft: 30 * time.Second}, rnd: 0.5, wantWait: 31500 * time.Millisecond},
		{name: "the spread never takes it past its time", deadline: now.Add(31 * time.Second),
			view: breakerView{open: true, cooldownLeft: 30 * time.Second}, rnd: 0.9, wantWait: 31 * time.Second},
		{name: "the cool-down ends past its time: give up at once", deadline: now.Add(20 * time.Second),
			view: breakerView{open: true, cooldownLeft: 30 * time.Second}, wantGiveUp: true},
		{name: "cool-down over: ask again at once", deadline: now.Add(time.Minute),
			view: breakerView{open: true}, wantWait: 0},
		{name: "a probe is out: wait for its verdict until its time ends", deadline: now.Add(2 * time.Minute),
			view: breakerView{}, wantWait: 2 * time.Minute},
		{name: "its time has ended", deadline: now, view: breakerView{}, wantGiveUp: true},
		{name: "its time ended while it waited", deadline: now.Add(-time.Second), view: breakerView{open: true}, wantGiveUp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, giveUp := breakerWaitVerdict(now, tt.deadline, tt.view, tt.rnd)
			if wait != tt.wantWait || giveUp != tt.wantGiveUp {
				t.Errorf("breakerWaitVerdict = %v, %v; want %v, %v", wait, giveUp, tt.wantWait, tt.wantGiveUp)
			}
		})
	}
}

func TestNotSentError(t *testing.T) {
	opened := time.Date(2026, 3, 1, 12, 0, 6, 0, time.UTC)
	tests := []struct {
		name       string
		last       hostFailure
		attempts   int
		wantClass  dlq.Class
		wantStatus int
		wantMsg    string
	}{
		{name: "an HTTP 500 is the cause", last: hostFailure{class: dlq.ClassHTTP5xx, status: 500, message: "500 Internal Server Error"},
			wantClass: dlq.ClassHTTP5xx, wantStatus: 500,
			wantMsg: "HTTP 500 Internal Server Error from http://h:80 (breaker open since 2026-03-01T12:00:06Z; this unit was not sent)"},
		{name: "a timeout is the cause", last: hostFailure{class: dlq.ClassTimeout, message: "no response headers within 60s"},
			wantClass: dlq.ClassTimeout,
			wantMsg:   "no response headers within 60s from http://h:80 (breaker open since 2026-03-01T12:00:06Z; this unit was not sent)"},
		{name: "a unit that failed itself first", last: hostFailure{class: dlq.ClassHTTP5xx, status: 502, message: "502 Bad Gateway"}, attempts: 2,
			wantClass: dlq.ClassHTTP5xx, wantStatus: 502,
			wantMsg: "HTTP 502 Bad Gateway from http://h:80 (breaker open since 2026-03-01T12:00:06Z; its retry was not sent after 2 attempts)"},
		{name: "no failure on record", wantClass: dlq.ClassCircuitOpen,
			wantMsg: "circuit breaker open from http://h:80 (breaker open since 2026-03-01T12:00:06Z; this unit was not sent)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := notSentError("http://h:80", breakerView{open: true, openedAt: opened, last: tt.last}, tt.attempts, "GET", "http://h/wfs")
			if e.Class != tt.wantClass || e.Status != tt.wantStatus || e.Message != tt.wantMsg || (NotSent(e) != nil) != (tt.attempts == 0) {
				t.Errorf("notSentError = %+v; want class %s, status %d, message %q, not sent %v", e, tt.wantClass, tt.wantStatus, tt.wantMsg, tt.attempts == 0)
			}
			if ns := NotSent(e); ns != nil && (ns.Host != "http://h:80" || !ns.Since.Equal(opened) || !strings.HasPrefix(tt.wantMsg, ns.LastFailure+" from ")) {
				t.Errorf("NotSent = %+v", ns)
			}
		})
	}
}

// TestDoBreakerWaitersWakeOnProbe: the units an open breaker holds send nothing, one of
// them probes the host once the cool-down ends, and the others wait for the probe's
// verdict on the breaker's change, not by asking again and again; when the probe
// succeeds they all go.
func TestDoBreakerWaitersWakeOnProbe(t *testing.T) {
	var healthy atomic.Bool
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if !healthy.Load() {
			w.WriteHeader(500)
			return
		}
		if n == 3 { // the probe: held until the others wait for it
			<-release
		}
		w.WriteHeader(200)
	}))
	defer srv.Close()
	clock := newFakeClock(false)
	h, _ := newHandler(t, clock, Options{Budget: Budget{Disabled: true}, Breaker: Breaker{ConsecutiveFailures: 2, Cooldown: 30 * time.Second}})
	req := Request{Policy: Policy{MaxAttempts: 1, MaxElapsed: 5 * time.Minute}, New: get(srv.URL)}
	noop := func(*http.Response) error { return nil }
	for range 2 {
		if err := h.Do(context.Background(), req, noop); ClassOf(err) != dlq.ClassHTTP5xx {
			t.Fatalf("unit on a down host: %v", err)
		}
	}
	healthy.Store(true)
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- h.Do(context.Background(), req, noop) }()
	}
	for clock.Waiting() < 4 {
		time.Sleep(time.Millisecond)
	}
	clock.Advance(34 * time.Second) // the cool-down and its spread are over: one probes
	for hits.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the others meet the probe and wait for its verdict
	asked := len(clock.Sleeps())
	close(release)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("unit after the probe: %v", err)
		}
	}
	if hits.Load() != 6 {
		t.Errorf("%d requests, want 2 failures, 1 probe and 3 units after it", hits.Load())
	}
	// Four waits for the cool-down, and one wait for the probe per other unit: no polling.
	if asked > 4+3 {
		t.Errorf("%d waits asked of the clock (%v), want at most 7", asked, clock.Sleeps())
	}
}

// TestDoBreakerGivesUpWithRealCause: a unit the open breaker holds past its max_elapsed
// is not sent, and fails with the host's last real failure.
func TestDoBreakerGivesUpWithRealCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
	}))
	defer srv.Close()
	h, _ := newHandler(t, newFakeClock(true), Options{Budget: Budget{Disabled: true}, Breaker: Breaker{ConsecutiveFailures: 2, Cooldown: 10 * time.Minute}})
	req := Request{Policy: Policy{MaxAttempts: 1, MaxElapsed: 3 * time.Minute}, New: get(srv.URL)}
	noop := func(*http.Response) error { return nil }
	for range 2 {
		_ = h.Do(context.Background(), req, noop)
	}
	err := h.Do(context.Background(), req, noop)
	if NotSent(err) == nil || ClassOf(err) != dlq.ClassHTTP5xx || !strings.Contains(err.Error(), "HTTP 500 Internal Server Error from ") {
		t.Fatalf("err = %v, want a not-sent http_5xx naming the real HTTP 500", err)
	}
	entry := dlq.FromError(err)
	if entry.Class != dlq.ClassHTTP5xx || entry.HTTPStatus != 500 {
		t.Errorf("dead letter class %s status %d, want http_5xx 500", entry.Class, entry.HTTPStatus)
	}
}

func TestWaitDeadline(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		ctx  context.Context
		want time.Time
	}{
		{name: "max_elapsed", ctx: context.Background(), want: start.Add(5 * time.Minute)},
		{name: "an earlier job end wins", ctx: WaitUntil(context.Background(), start.Add(time.Minute)), want: start.Add(time.Minute)},
		{name: "a later one does not", ctx: WaitUntil(context.Background(), start.Add(time.Hour)), want: start.Add(5 * time.Minute)},
		{name: "the earlier of two limits", ctx: WaitUntil(WaitUntil(context.Background(), start.Add(2*time.Minute)), start.Add(3*time.Minute)),
			want: start.Add(2 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := waitDeadline(tt.ctx, start, 5*time.Minute); !got.Equal(tt.want) {
				t.Errorf("waitDeadline = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBreakerWouldAllow: a unit the breaker refused asks, before it waits, whether the
// breaker would let it through now, taking nothing: the probe's verdict or a freed slot
// may have come between the refusal and the wait, and waiting for the next change would
// then hold the unit for its whole max_elapsed on a host that is fine.
func TestBreakerWouldAllow(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cfg := Breaker{Cooldown: 30 * time.Second, HalfOpenProbes: 1}.withDefaults()
	tests := []struct {
		name    string
		state   int
		probing int
		now     time.Time
		cfg     Breaker
		want    bool
	}{
		{name: "closed", state: stateClosed, now: t0, cfg: cfg, want: true},
		{name: "open, cooling down", state: stateOpen, now: t0.Add(10 * time.Second), cfg: cfg},
		{name: "open, cool-down over", state: stateOpen, now: t0.Add(30 * time.Second), cfg: cfg, want: true},
		{name: "half-open, probe out", state: stateHalfOpen, probing: 1, now: t0.Add(40 * time.Second), cfg: cfg},
		{name: "half-open, slot free", state: stateHalfOpen, probing: 0, now: t0.Add(40 * time.Second), cfg: cfg, want: true},
		{name: "disabled", state: stateOpen, now: t0, cfg: Breaker{Disabled: true}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := breaker{cfg: tt.cfg, state: tt.state, probing: tt.probing, openedAt: t0}
			if got := b.wouldAllow(tt.now); got != tt.want {
				t.Errorf("wouldAllow = %v, want %v", got, tt.want)
			}
			if b.state != tt.state || b.probing != tt.probing {
				t.Errorf("wouldAllow changed the breaker: state %d probing %d", b.state, b.probing)
			}
		})
	}
}
