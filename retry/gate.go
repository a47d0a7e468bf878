package retry

import (
	"context"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

// gate holds every request to a host until an instant: the end of a delay the
// server asked for in Retry-After (which is about the host, not just the
// request it answered), or of the pause after a 429 that named no delay. It
// only ever moves later. The zero value is an open gate. Callers hold the
// host's lock.
type gate struct {
	until time.Time     // no request before this
	span  time.Duration // the delay that set until; 0 for a pause
}

// hold closes the gate for d from now, unless it is already closed for longer.
// span is the delay the server asked for, over a tenth of which wake-ups are
// spread.
func (g *gate) hold(now time.Time, d, span time.Duration) {
	if until := now.Add(d); until.After(g.until) {
		g.until, g.span = until, span
	}
}

// serverDelay applies what an answer said about waiting. For a throttled,
// unavailable or timed-out answer, or one a Classify hook found transient, the
// delay before the retry (o.hint) is what Retry-After asked, or for a 429
// the time to the reset of a quota known to be spent; it is capped at
// p.MaxServerDelay (o.capped keeps what was asked). A Retry-After also holds the
// whole host; a 429 with no hint at all holds it for the adaptive rate's pause.
// rnd returns a value in [0,1). Callers hold hs.mu.
func (hs *host) serverDelay(now time.Time, o *outcome, hn hints, p Policy, rnd func() float64) {
	if o.class != dlq.ClassRateLimited && o.class != dlq.ClassHTTP5xx && o.class != dlq.ClassTimeout &&
		!(o.hooked && o.transient) {
		return
	}
	switch {
	case hn.hasRetryAfter:
		o.hint, o.hasHint = hn.retryAfter, true
	case o.class == dlq.ClassRateLimited:
		o.hint, o.hasHint = hs.pacer.quota.retryHint(now)
	}
	if o.hasHint && o.hint > p.MaxServerDelay {
		o.capped, o.hint = o.hint, p.MaxServerDelay
	}
	if o.hasHint && hn.hasRetryAfter {
		hs.gate.hold(now, o.hint, o.hint)
	}
	if o.class == dlq.ClassRateLimited && !o.hasHint {
		hs.gate.hold(now, hs.pacer.adaptive.pause(p.BaseDelay, rnd()), 0)
	}
}

// waitGate waits until the host's gate is open, at most p.MaxServerDelay at a
// time, ending at once when ctx is done.
func (h *Handler) waitGate(ctx context.Context, hs *host, p Policy) error {
	for {
		now := h.clock.Now()
		hs.mu.Lock()
		g := hs.gate
		hs.mu.Unlock()
		if !g.until.After(now) {
			return nil
		}
		// Spread the wake-ups over a tenth of the gate, at most 1s.
		spread := time.Duration(h.jitter.float64() * float64(min(g.span/10, time.Second)))
		h.m.throttled.WithLabelValues(hs.key, "retry_after").Inc()
		d := min(g.until.Sub(now)+spread, p.MaxServerDelay)
		h.m.waited.WithLabelValues(hs.key, "retry_after").Add(d.Seconds())
		if err := h.wait(ctx, hs.key, d); err != nil {
			return err
		}
	}
}
