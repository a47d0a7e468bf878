package retry

import (
	"net/http"
	"time"
)

// serverClock estimates how far a host's clock runs from ours, from the Date header of
// its answers, so that an absolute reset it sends (X-RateLimit-Reset in epoch seconds,
// a Retry-After date) is read on our clock: a server a second and a half ahead would
// otherwise have the pacer wait a second and a half past every reset.
//
// Date has whole seconds, written between the request's sending (sent) and its answer's
// arrival (recv), so each answer bounds the offset (server minus ours) to
// [Date - recv, Date + 1s - sent); the bounds of successive answers are intersected, and
// the offset is their middle. Answers that contradict the bounds (the server's clock
// was set) start them afresh. Callers hold the host's lock.
type serverClock struct {
	have   bool
	lo, hi time.Duration
}

// observe narrows the bounds with one answer's Date header.
func (c *serverClock) observe(h http.Header, sent, recv time.Time) {
	v := h.Get("Date")
	if v == "" || sent.IsZero() {
		return
	}
	d, err := http.ParseTime(v)
	if err != nil {
		return
	}
	lo, hi := d.Sub(recv), d.Add(time.Second).Sub(sent)
	if !c.have || lo > c.hi || hi < c.lo {
		c.have, c.lo, c.hi = true, lo, hi
		return
	}
	c.lo, c.hi = max(c.lo, lo), min(c.hi, hi)
}

// offset is the server's clock minus ours, 0 until an answer had a Date. An offset
// within the uncertainty of whole seconds (its bounds straddle zero) is taken as none.
func (c *serverClock) offset() time.Duration {
	if !c.have || (c.lo <= 0 && c.hi >= 0) {
		return 0
	}
	return (c.lo + c.hi) / 2
}

// late is how much later than at offset a time on the server's clock may fall on ours:
// half the bounds' width. A reset is taken that much later, so that the first requests
// of a new window never reach the server before its window has rolled.
func (c *serverClock) late() time.Duration {
	if !c.have {
		return 0
	}
	return (c.hi - c.lo) / 2
}
