package retry

import (
	"cmp"
	"time"
)

// Breaker configures the per-host circuit breaker. It counts units whose first
// attempt failed for the host's sake (5xx, timeouts, network errors, truncated
// bodies), and successes; a retry that fails again is the same broken request,
// not more evidence against the host, so one URL failing forever cannot open
// the breaker for every other unit. 4xx answers, 429s, sink faults and the caller's
// cancellations are not host failures. Zero fields take their defaults: it opens after
// ConsecutiveFailures 10 failures in a row, or when FailureRatio 0.5 of the
// last Window 20 attempts failed; it stays open for Cooldown 30s, sending
// nothing to the host: units wait for the cool-down, then HalfOpenProbes 1 attempt
// goes through while the others wait for its verdict: success closes it, failure opens
// it again. A unit the breaker holds past its max_elapsed is not sent and fails with the
// host's last real failure (its class and status, NotSent set), not with the breaker.
// Disabled turns it off.
type Breaker struct {
	ConsecutiveFailures int
	FailureRatio        float64
	Window              int
	Cooldown            time.Duration
	HalfOpenProbes      int
	Disabled            bool
}

func (b Breaker) withDefaults() Breaker {
	b.ConsecutiveFailures = cmp.Or(b.ConsecutiveFailures, 10)
	b.FailureRatio = cmp.Or(b.FailureRatio, 0.5)
	b.Window = cmp.Or(b.Window, 20)
	b.Cooldown = cmp.Or(b.Cooldown, 30*time.Second)
	b.HalfOpenProbes = cmp.Or(b.HalfOpenProbes, 1)
	return b
}

// Breaker states, as the breaker-state gauge reports them.
const (
	stateClosed   = 0
	stateHalfOpen = 1
	stateOpen     = 2
)

// breaker is a per-host circuit breaker over attempt outcomes: closed, it
// lets every attempt through and counts failures; open, it fails attempts at
// once until the cool-down ends; half-open, it lets a few probes decide.
// The zero value is not usable: make one with newBreaker. Callers hold the
// host's lock.
type breaker struct {
	cfg         Breaker
	state       int
	openedAt    time.Time
	consecutive int
	ring        []bool // recent outcomes, true = failure
	ringPos     int
	ringFull    bool
	probing     int
	opened      int // times it has opened
	// last is the last attempt that failed for the host's sake: what a unit the open
	// breaker kept from being sent is dead-lettered with.
	last hostFailure
	// changed is closed, and replaced, whenever the breaker opens or closes or a probe
	// slot frees: the units waiting for it wake on that instead of polling.
	changed chan struct{}
}

// newBreaker returns a closed breaker; cfg has its defaults applied.
func newBreaker(cfg Breaker) breaker {
	return breaker{cfg: cfg, ring: make([]bool, cfg.Window), changed: make(chan struct{})}
}

// watch returns a channel closed at the breaker's next change.
func (b *breaker) watch() <-chan struct{} {
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// signal wakes the units waiting for the breaker's next change.
func (b *breaker) signal() {
	if b.changed != nil {
		close(b.changed)
	}
	b.changed = make(chan struct{})
}

// allow reports whether an attempt may go, and whether it is a half-open
// probe.
func (b *breaker) allow(now time.Time) (ok, probe bool) {
	if b.cfg.Disabled {
		return true, false
	}
	switch b.state {
	case stateOpen:
		if now.Sub(b.openedAt) < b.cfg.Cooldown {
			return false, false
		}
		b.state = stateHalfOpen
		b.probing = 0
		fallthrough
	case stateHalfOpen:
		if b.probing >= b.cfg.HalfOpenProbes {
			return false, false
		}
		b.probing++
		return true, true
	}
	return true, false
}

// wouldAllow tells, without taking a probe slot, whether allow would let an attempt
// through at now: the breaker is closed, or its cool-down is over, or a probe slot is
// free. A unit refused a moment ago asks it before it waits, so that the probe's verdict
// or a freed slot that came between the refusal and the wait is not missed.
func (b *breaker) wouldAllow(now time.Time) bool {
	switch {
	case b.cfg.Disabled || b.state == stateClosed:
		return true
	case b.state == stateOpen && now.Sub(b.openedAt) < b.cfg.Cooldown:
		return false
	case b.state == stateOpen:
		return b.cfg.HalfOpenProbes > 0
	}
	return b.probing < b.cfg.HalfOpenProbes
}

// verdict records attempt n of a unit when it is evidence about the host, and
// reports whether it did; an attempt without a verdict must release its probe
// slot. A unit that keeps failing is one broken request, not a broken host: its
// retries count only when they succeed. A host that is down fails the first
// attempt of unit after unit, which is what opens the breaker.
func (b *breaker) verdict(now time.Time, n int, hostFault, probe bool) bool {
	if n > 1 && hostFault && !probe {
		return false
	}
	b.record(now, hostFault, probe)
	return true
}

// record notes an attempt's outcome. A probe's success closes the breaker,
// its failure opens it again.
func (b *breaker) record(now time.Time, failure, probe bool) {
	if b.cfg.Disabled {
		return
	}
	if probe {
		b.probing = max(b.probing-1, 0)
		b.signal()
		if b.state == stateHalfOpen {
			if failure {
				b.open(now)
			} else {
				b.reset()
			}
			return
		}
	}
	if b.state != stateClosed {
		return
	}
	if failure {
		b.consecutive++
	} else {
		b.consecutive = 0
	}
	b.ring[b.ringPos] = failure
	b.ringPos = (b.ringPos + 1) % len(b.ring)
	if b.ringPos == 0 {
		b.ringFull = true
	}
	if b.consecutive >= b.cfg.ConsecutiveFailures {
		b.open(now)
		return
	}
	if b.ringFull && b.cfg.FailureRatio > 0 {
		n := 0
		for _, f := range b.ring {
			if f {
				n++
			}
		}
		if float64(n)/float64(len(b.ring)) >= b.cfg.FailureRatio {
			b.open(now)
		}
	}
}

// retryIn is how long an attempt the breaker refused should wait before asking again:
// until the cool-down ends while it is open, or a moment (a tenth of the cool-down, at
// most a second) while another attempt probes the host.
func (b *breaker) retryIn(now time.Time) time.Duration {
	if b.state == stateOpen {
		if d := b.openedAt.Add(b.cfg.Cooldown).Sub(now); d > 0 {
			return d
		}
	}
	return min(b.cfg.Cooldown/10, time.Second)
}

// release gives back a probe slot whose attempt ended without a verdict.
func (b *breaker) release(probe bool) {
	if probe {
		b.probing = max(b.probing-1, 0)
		b.signal()
	}
}

func (b *breaker) open(now time.Time) {
	b.opened++
	b.state = stateOpen
	b.openedAt = now
	b.probing = 0
	b.signal()
}

func (b *breaker) reset() {
	b.state = stateClosed
	b.consecutive = 0
	clear(b.ring)
	b.ringPos = 0
	b.ringFull = false
	b.signal()
}
