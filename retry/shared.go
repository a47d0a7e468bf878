package retry

import (
	"context"
	"math"
	"sync"
	"time"
)

// Shared is pacing that several processes sending to the same hosts agree on, through a
// store they share (PostgreSQL): one send schedule per host, and pauses any of them
// calls. Without it, two processes each pace themselves to the server's quota and
// together overrun it. Implementations are safe for concurrent use; they measure time on
// their own clock and speak in durations from now, so the processes' clocks need not
// agree.
type Shared interface {
	// ReservePace books n send slots for host, interval apart, after every slot already
	// booked by any process and after any pause, and returns how long from now the
	// first may go (0 or less: at once). A host idle for a while may send up to burst
	// slots at once. An interval of 0 books nothing and returns the pause alone.
	ReservePace(ctx context.Context, host string, n int, interval time.Duration, burst int) (time.Duration, error)
	// PausePace holds every process's requests to host for d from now; a longer pause
	// already called stands.
	PausePace(ctx context.Context, host string, d time.Duration) error
}

// Shared pacing's settings.
const (
	// sharedSpan is how much sending one booking covers: a busy host costs the store one
	// statement per span per process, or one per batch (see sharedMaxBatch) when more
	// requests than a batch go in a span.
	sharedSpan = 250 * time.Millisecond
	// sharedMaxBatch caps a booking (as does the host's concurrency limit), so that a process
	// that dies, or has no request ready, wastes little.
	sharedMaxBatch = 64
	// sharedUse is the share of a known quota the processes are paced to together:
	// even spacing at the quota's own rate puts one request too many in a fixed window
	// whenever the network's jitter moves a request across its edge.
	sharedUse = 0.97
	// longWindow is the window from which a quota's first half may go at once: with a
	// quota per hour, spacing every request evenly would take the hour for a harvest the
	// server would take in a minute.
	longWindow = 10 * time.Second
)

// sharedSlots is one host's part of the shared schedule in this process: the slots of
// its last booking not yet used. Its own mutex serialises bookings (one statement at a
// time per host), apart from the host's lock.
type sharedSlots struct {
	mu       sync.Mutex
	next     time.Time // the next slot of the booking
	left     int       // slots of the booking not yet used
	interval time.Duration
	checked  time.Time // when the pause was last read, for a host with no interval
	paused   time.Time // the shared pause as last read
	failed   bool      // the store failed: pacing is local until it answers again
}

// sharedInterval is the spacing and burst that keep every process together within the
// host's quota as this process knows it: the quota's limit per window when an answer has
// said both, the configured rate, whichever is stricter; 0 when neither is known (the
// adaptive rate without headers stays per process: each one's cuts on 429s share the
// server between them, as TCP's flows share a link). Callers hold the host's lock.
//
// Until the window's length is known (a server that sends only its reset shows it at the
// second reset), what remains of the window is spread over the time to its reset.
func (pc *pacer) sharedInterval(now time.Time) (time.Duration, int) {
	var interval time.Duration
	burst := 1
	q := &pc.quota
	switch {
	case q.have && q.limit > 0 && q.window > 0:
		per := q.limit
		if q.window >= longWindow {
			burst = int(q.limit / 2)
			per = q.limit - float64(burst)
		}
		interval = time.Duration(float64(q.window) / (per * sharedUse))
	case q.have && q.reset.After(now):
		left := math.Max(q.est+float64(q.pending), 0) // the server's word less what this process sent since
		interval = time.Duration(float64(q.reset.Sub(now)) / (left + 1))
	}
	if pc.fixed != nil && pc.fixed.Limit() > 0 {
		if d := time.Duration(float64(time.Second) / float64(pc.fixed.Limit())); d > interval {
			interval, burst = d, max(burst, pc.fixed.Burst())
		}
	}
	return interval, max(burst, 1)
}

// sharedWait takes this request's slot of the host's shared schedule, booking more when
// the last booking is spent, and returns how long to wait for it and whether the slot
// paces the host (an interval is known and the store answered). When the store fails, it
// logs once and returns 0, false: the local pacing goes on alone.
func (h *Handler) sharedWait(ctx context.Context, hs *host) (time.Duration, bool) {
	hs.mu.Lock()
	interval, burst := hs.pacer.sharedInterval(h.clock.Now())
	limit := hs.sem.max
	hs.mu.Unlock()
	s := &hs.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	now := h.clock.Now()
	if interval != s.interval {
		s.left, s.interval = 0, interval // the pace changed: the booking's spacing is stale
	}
	if interval == 0 {
		// Nothing to book: only a pause another process called can hold us, read at
		// most once a span.
		if now.Sub(s.checked) >= sharedSpan {
			d, err := h.shared.ReservePace(ctx, hs.key, 0, 0, 0)
			if h.sharedFailed(ctx, hs, s, err) {
				return 0, false
			}
			s.checked, s.paused = now, now.Add(d)
		}
		return max(s.paused.Sub(now), 0), false
	}
	// Slots of the booking that passed unused are gone: sent now, they would bunch with
	// the slots the other processes hold.
	for s.left > 0 && now.Sub(s.next) > interval/2 {
		s.left--
		s.next = s.next.Add(interval)
	}
	if s.left == 0 {
		n := int(math.Ceil(float64(sharedSpan) / float64(interval)))
		n = min(max(n, 1), sharedMaxBatch, max(limit, 1))
		d, err := h.shared.ReservePace(ctx, hs.key, n, interval, burst)
		if h.sharedFailed(ctx, hs, s, err) {
			return 0, false
		}
		now = h.clock.Now()
		s.next, s.left = now.Add(max(d, 0)), n
		h.m.shared.WithLabelValues(hs.key).Inc()
	}
	slot := s.next
	s.next = s.next.Add(interval)
	s.left--
	return max(slot.Sub(now), 0), true
}

// sharedFailed reports whether err ended a call to the store, logging the first failure
// of a run of them and the recovery.
func (h *Handler) sharedFailed(ctx context.Context, hs *host, s *sharedSlots, err error) bool {
	if err != nil {
		if !s.failed && ctx.Err() == nil {
			h.log.WarnContext(ctx, "shared pacing failed: this process paces the host alone until the store answers", "host", hs.key, "err", err)
		}
		s.failed = true
		return true
	}
	if s.failed {
		h.log.InfoContext(ctx, "shared pacing answers again", "host", hs.key)
		s.failed = false
	}
	return false
}

// sharePause tells the other processes to hold their requests to the host for d, and
// drops what is left of this process's booking (its slots fall within the pause).
func (h *Handler) sharePause(ctx context.Context, hs *host, d time.Duration) {
	s := &hs.shared
	s.mu.Lock()
	s.left = 0
	s.paused = h.clock.Now().Add(d)
	s.mu.Unlock()
	if err := h.shared.PausePace(ctx, hs.key, d); err != nil && ctx.Err() == nil {
		h.log.WarnContext(ctx, "shared pacing: could not pause the other processes", "host", hs.key, "err", err)
	}
}
