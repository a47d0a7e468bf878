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
