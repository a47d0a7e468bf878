package retry

import (
	"testing"
	"time"
)

// TestQuotaPacerStaleAnswer: a slow answer describing a window that has ended arrives
// after the next window's first answers; it leaves the estimate alone instead of putting
// back a passed reset, which had every worker probe at once.
func TestQuotaPacerStaleAnswer(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var q quotaPacer
	rnd := func() float64 { return 0.5 }
	q.observe(t0, quotaObs{limit: 10, remaining: 9, reset: t0.Add(500 * time.Millisecond), window: time.Second}, 1, 0)
	// The next window: its first answer says 8 remain.
	now := t0.Add(700 * time.Millisecond)
	q.observe(now, quotaObs{limit: 10, remaining: 8, reset: t0.Add(1500 * time.Millisecond), window: time.Second}, 5, 0)
	// A stalled answer of the first window arrives with a higher sequence number.
	q.observe(now, quotaObs{limit: 10, remaining: 0, reset: t0.Add(500 * time.Millisecond), window: time.Second}, 6, 0)
	if q.est != 8 || !q.reset.Equal(t0.Add(1500*time.Millisecond)) {
		t.Fatalf("after a stale answer: est %.0f, reset %s; want 8 and the current window's", q.est, q.reset.Sub(t0))
	}
	// Nor is an answer whose reset has passed taken.
	q.observe(t0.Add(1600*time.Millisecond), quotaObs{limit: 10, remaining: 0, reset: t0.Add(1500 * time.Millisecond)}, 7, 0)
	if q.reset.IsZero() {
		t.Fatal("an answer of a passed window cleared the reset")
	}
	if got := q.grant(now, rnd); !got.Equal(now) {
		t.Errorf("grant at %s with 8 remaining, want now", got.Sub(t0))
	}
}

// TestQuotaPacerCarry: requests sent while it is uncertain whether the window has ended
// (between its earliest and latest end on our clock) count against the next window too.
func TestQuotaPacerCarry(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	rnd := func() float64 { return 0.5 }
	var q quotaPacer
	early, end := t0.Add(800*time.Millisecond), t0.Add(time.Second)
	q.observe(t0, quotaObs{limit: 10, remaining: 9, reset: end, early: early, window: time.Second}, 1, 0)
	for i := range 3 {
		at := early.Add(time.Duration(i+1) * 50 * time.Millisecond)
		q.grant(at, rnd)
		q.sent(at, true)
	}
	q.grant(t0.Add(500*time.Millisecond), rnd) // before early: the old window's alone
	q.sent(t0.Add(500*time.Millisecond), true)
	q.roll(end)
	if q.est != 7 {
		t.Errorf("est %.0f after the roll, want 10 - 3 sent between the window's earliest and latest end", q.est)
	}
	if !q.early.Equal(early.Add(time.Second)) || !q.reset.Equal(end.Add(time.Second)) {
		t.Errorf("next window [%s, %s], want both a second later", q.early.Sub(t0), q.reset.Sub(t0))
	}
}

// simulateAdaptive drives an adaptive rate against server (which says whether a request
// arriving at t is admitted, and answers at once) from t0 for d, the client able to send
// one request a millisecond, resting after a 429 as the handler's gate does. It returns
// the requests sent and throttled from the instant since on.
func simulateAdaptive(a *adaptiveRate, t0 time.Time, d time.Duration, since time.Duration, server func(t time.Time) bool) (sent, throttled int) {
	now, seq := t0, uint64(0)
	for now.Before(t0.Add(d)) {
		t := a.grant(now)
		seq++
		a.sent(t, seq)
		ok := server(t)
		if t.Sub(t0) >= since {
			sent++
			if !ok {
				throttled++
			}
		}
		now = t.Add(time.Millisecond)
		if ok {
			a.accepted(t)
		} else {
			a.throttled(t, t, seq)
			now = now.Add(a.pause(500*time.Millisecond, 0.5))
		}
	}
	return sent, throttled
}

// TestAdaptiveRateQuotaHalved: a token bucket whose rate halves mid-run (another client
// took half the quota). The cut is taken from what the server admitted since the last
// cut, so the new rate is found within a second; a cut from the peak of the last seconds
// kept the old rate and drew a 429 every few requests for as long as it remembered.
func TestAdaptiveRateQuotaHalved(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	tokens, rate, last := 200.0, 200.0, t0
	bucket := func(t time.Time) bool {
		if t.Sub(t0) >= 1500*time.Millisecond && rate == 200 {
			rate, tokens = 100, min(tokens, 100)
		}
		tokens = min(rate, tokens+t.Sub(last).Seconds()*rate)
		last = t
		if tokens >= 1 {
			tokens--
			return true
		}
		return false
	}
	var a adaptiveRate
	sent, throttled := simulateAdaptive(&a, t0, 6*time.Second, 1500*time.Millisecond, bucket)
	t.Logf("rate %.1f/s; after the halving %d of %d throttled", a.rate, throttled, sent)
	if a.rate < 70 || a.rate > 105 {
		t.Errorf("rate in force %.1f/s, want near the halved quota of 100/s", a.rate)
	}
	if throttled > 5 {
		t.Errorf("from the halving on: %d of %d requests throttled, want at most 5 (a cut from the last second alone drew 8)", throttled, sent)
	}
}

// TestAdaptiveRateFixedWindows: fixed one-second windows of 100. After a cut, the rest of
// a spent window admits nothing; a cut taken there must not read that as a rate of zero
// (and halve the pace each window), and as the cuts repeat at one rate the probing above
// it becomes rarer.
func TestAdaptiveRateFixedWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	count, window := 0, int64(-1)
	fixed := func(t time.Time) bool {
		if w := int64(t.Sub(t0) / time.Second); w != window {
			window, count = w, 0
		}
		count++
		return count <= 100
	}
	var a adaptiveRate
	sent, throttled := simulateAdaptive(&a, t0, 30*time.Second, 5*time.Second, fixed)
	if share := float64(throttled) / float64(sent); share > 0.02 {
		t.Errorf("after the first 5 s: %d of %d requests throttled (%.1f%%), want at most 2%%", throttled, sent, 100*share)
	}
	if used := float64(sent-throttled) / 25 / 100; used < 0.85 {
		t.Errorf("after the first 5 s: %.0f%% of the quota used, want at least 85%%", 100*used)
	}
	t.Logf("rate %.1f/s; %d of %d throttled; stable %d", a.rate, throttled, sent, a.stable)
	if a.stable == 0 {
		t.Error("repeated cuts at one rate not seen as a stable quota")
	}
}
