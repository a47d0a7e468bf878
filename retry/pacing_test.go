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
