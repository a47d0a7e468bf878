package retry

import (
	"net/http"
	"testing"
	"time"
)

// TestServerClock: Date headers of whole seconds, written between sending and
// receiving, narrow the server's offset to well within a second.
func TestServerClock(t *testing.T) {
	ours := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	const skew = 1500 * time.Millisecond
	var c serverClock
	if c.offset() != 0 {
		t.Fatal("an offset before any Date")
	}
	for i := range 40 {
		sent := ours.Add(time.Duration(i) * 137 * time.Millisecond)
		recv := sent.Add(80 * time.Millisecond)
		gen := sent.Add(40 * time.Millisecond) // when the server wrote Date, on our clock
		h := http.Header{"Date": {gen.Add(skew).Truncate(time.Second).Format(http.TimeFormat)}}
		c.observe(h, sent, recv)
	}
	if got := c.offset(); got < skew-150*time.Millisecond || got > skew+150*time.Millisecond {
		t.Errorf("offset %s, want %s within 150ms (bounds %s..%s)", got, skew, c.lo, c.hi)
	}
	// The server's clock is set back: the bounds start again.
	c.observe(http.Header{"Date": {ours.Add(time.Hour).Add(-10 * time.Second).Format(http.TimeFormat)}}, ours.Add(time.Hour), ours.Add(time.Hour+time.Millisecond))
	if got := c.offset(); got > -9*time.Second || got < -11*time.Second {
		t.Errorf("after the server's clock was set back 10 s: offset %s", got)
	}
	// No skew: Date within the second of our clock reads as none.
	var z serverClock
	z.observe(http.Header{"Date": {ours.Format(http.TimeFormat)}}, ours, ours.Add(10*time.Millisecond))
	if z.offset() != 0 {
		t.Errorf("offset %s for a server on our clock", z.offset())
	}
}

// TestWindowPhase: a server 1.5 s ahead, with fixed one-second windows reset at whole
// seconds of its clock and answers that arrive 300 ms to 3 s late, has its windows'
// ends placed on our clock within a few milliseconds, from the send times alone; the
// length is inferred from the resets, and a server whose clock is set starts afresh.
func TestWindowPhase(t *testing.T) {
	ours := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	const skew = 1500 * time.Millisecond
	const delay = 2 * time.Millisecond // from our send to the server's admission
	reset := func(sent time.Time) time.Time {
		return sent.Add(delay + skew).Truncate(time.Second).Add(time.Second)
	}
	var p windowPhase
	if _, _, ok := p.bounds(ours); ok {
		t.Fatal("bounds before any answer")
	}
	for i := range 60 {
		sent := ours.Add(time.Duration(i) * 97 * time.Millisecond)
		p.observe(sent, reset(sent), 0)
	}
	if p.length() != time.Second {
		t.Fatalf("window length %s, want 1s inferred from the resets", p.length())
	}
	r := reset(ours.Add(3 * time.Second))
	early, end, ok := p.bounds(r)
	truth := r.Add(-skew - delay) // the last send time that still reaches the old window
	if !ok || end.Before(truth) || end.Sub(truth) > 60*time.Millisecond || truth.Sub(early) > 60*time.Millisecond || early.After(truth) {
		t.Errorf("window end placed in [%s, %s], the truth is %s", early.Sub(ours), end.Sub(ours), truth.Sub(ours))
	}
	// The server's clock is set back 10 s: the next answers contradict the bounds.
	sent := ours.Add(time.Minute)
	p.observe(sent, reset(sent).Add(-10*time.Second), 0)
	if _, end, _ := p.bounds(reset(sent).Add(-10 * time.Second)); end.Before(sent) || end.After(sent.Add(time.Second+phaseMargin)) {
		t.Errorf("after the clock was set: end %s for a request sent at %s", end.Sub(ours), sent.Sub(ours))
	}
}

func TestResetOnOurClock(t *testing.T) {
	reset := time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC) // on the server's clock
	tests := []struct {
		name      string
		offset    time.Duration
		late      time.Duration
		wantEarly time.Time
		wantEnd   time.Time
	}{
		{name: "clocks agree", wantEarly: reset, wantEnd: reset},
		{name: "server ahead", offset: 1500 * time.Millisecond,
			wantEarly: reset.Add(-1500 * time.Millisecond), wantEnd: reset.Add(-1500 * time.Millisecond)},
		{name: "server behind", offset: -2 * time.Second,
			wantEarly: reset.Add(2 * time.Second), wantEnd: reset.Add(2 * time.Second)},
		{name: "uncertain offset widens both ways", offset: time.Second, late: 300 * time.Millisecond,
			wantEarly: reset.Add(-1300 * time.Millisecond), wantEnd: reset.Add(-700 * time.Millisecond)},
		{name: "uncertain with no offset", late: 500 * time.Millisecond,
			wantEarly: reset.Add(-500 * time.Millisecond), wantEnd: reset.Add(500 * time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			early, end := resetOnOurClock(reset, tt.offset, tt.late)
			if !early.Equal(tt.wantEarly) || !end.Equal(tt.wantEnd) {
				t.Errorf("resetOnOurClock = %v, %v; want %v, %v", early, end, tt.wantEarly, tt.wantEnd)
			}
		})
	}
}
