package retry

import (
	"cmp"
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

// windowPhase places a host's fixed quota windows on our clock from the send times of
// the requests whose answers named each window's reset, the instant the answer was valid
// for, rather than its arrival: the server decided Remaining when it admitted the request,
// which a slow answer reports hundreds of milliseconds and possibly a window later.
//
// Let θ be the send time (ours) at which a request reaches the server just as the window
// with reset R (the server's clock) ends, minus R. A request sent at s whose answer named
// R was admitted within that window, so s - R < θ <= s - R + W for a window of length W.
// θ is the same for every window (the windows are fixed; the network's delay is in it,
// and so is the skew of the server's clock and any rounding of its resets to whole
// seconds), so the bounds of every answer are intersected: within a few windows they
// close to the spacing of the requests around a boundary, whatever the Date header or the
// answers' latency. A window's end on our clock is then R + hi: a request sent at or after
// it counts against the next window. Answers that contradict the bounds (the server's
// clock was set, or its resets are not fixed windows) start them afresh. Callers hold
// the host's lock.
type windowPhase struct {
	have   bool
	window time.Duration
	lo, hi time.Duration
	// The windows' length, when the server does not send it, is the shortest distance
	// between two resets it named, on its own clock: whole seconds apart, exactly, where
	// resets placed on ours differ by the uncertainty of each placement.
	lastReset time.Time
	inferred  time.Duration
}

// phaseMargin is added to a window's end for the jitter of the network's delay: a request
// sent that much after the estimated end still reaches the server after it.
const phaseMargin = 5 * time.Millisecond

// observe narrows the bounds with one answer: the request's send time and the reset its
// answer named, on the server's clock, for windows of length window (0: not sent, which
// has the length inferred from the resets; until it is, the bounds are left alone).
func (p *windowPhase) observe(sent, reset time.Time, window time.Duration) {
	if reset.IsZero() || sent.IsZero() {
		return
	}
	if !p.lastReset.IsZero() && reset.After(p.lastReset) {
		if d := reset.Sub(p.lastReset); d >= 100*time.Millisecond && d <= 24*time.Hour && (p.inferred == 0 || d < p.inferred) {
			p.inferred = d
		}
	}
	if p.lastReset.IsZero() || reset.After(p.lastReset) {
		p.lastReset = reset
	}
	window = cmp.Or(window, p.inferred)
	if window <= 0 {
		return
	}
	lo := sent.Sub(reset)
	hi := lo + window
	if !p.have || p.window != window || lo >= p.hi+phaseMargin || hi <= p.lo-phaseMargin {
		p.have, p.window, p.lo, p.hi = true, window, lo, hi
		return
	}
	p.lo, p.hi = max(p.lo, lo), min(p.hi, hi)
	if p.lo > p.hi {
		// Within the jitter of the delay: meet in the middle.
		m := p.lo + (p.hi-p.lo)/2
		p.lo, p.hi = m, m
	}
}

// length is the windows' length: as sent, else as inferred; 0 while unknown.
func (p *windowPhase) length() time.Duration {
	return cmp.Or(p.window, p.inferred)
}

// bounds places the end of the window that resets at reset (the server's clock) on our
// clock: a request sent at or after end counts against the next window, one sent before
// early against this one, one between against either. ok is false until an answer placed
// the windows.
func (p *windowPhase) bounds(reset time.Time) (early, end time.Time, ok bool) {
	if !p.have {
		return time.Time{}, time.Time{}, false
	}
	return reset.Add(p.lo - phaseMargin), reset.Add(p.hi + phaseMargin), true
}

// answerHints reads what an answer's headers say about pacing, with the absolute
// times in them brought from the server's clock to ours. The answer's Date narrows
// the host's clock offset first. An absolute reset of fixed windows is then placed by
// the send times of the answers that named it (windowPhase); failing that (a time to
// go, or the window's length not known yet), by the clock offset, at the late end of
// what it allows (resetOnOurClock). sent and recv are when the request went and its
// headers came, on our clock. It takes the host's lock.
func (hs *host) answerHints(h http.Header, sent, recv time.Time) hints {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.clock.observe(h, sent, recv)
	off, late := hs.clock.offset(), hs.clock.late()
	hn := parseHints(h, recv.Add(off))
	if r := hn.quota.reset; !r.IsZero() {
		hn.quota.early, hn.quota.reset = resetOnOurClock(r, off, late)
		if hn.quota.absolute {
			hs.phase.observe(sent, r, hn.quota.window)
			if early, end, ok := hs.phase.bounds(r); ok {
				hn.quota.reset, hn.quota.early = end, early
				hn.quota.window = hs.phase.length()
			}
		}
	}
	return hn
}

// resetOnOurClock brings a reset read on the server's clock to ours, given the
// server's offset (its clock minus ours) and how late a time on it may fall
// (serverClock.late): the earliest and the latest it may be. The pacer waits for the
// latest, so a new window's first requests never reach the server before it rolls.
func resetOnOurClock(reset time.Time, offset, late time.Duration) (early, end time.Time) {
	return reset.Add(-late - offset), reset.Add(late - offset)
}
