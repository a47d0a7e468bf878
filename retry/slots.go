package retry

import (
	"context"
	"math"
	"sync"
	"time"
)

// MaxAdaptiveConcurrency is how many requests a host may have in flight when its
// rate_limit.concurrency is not set and its answers are slow: the server's quota, not a
// slow answer, then decides the pace.
const MaxAdaptiveConcurrency = 16

// slots is a host's requests in flight: a semaphore whose limit moves. With a fixed
// concurrency (configured) the limit stays put. Adaptive, it follows Little's law: the
// pace the server's quota allows times how long an answer takes (the requests needed in
// flight to keep the quota in use when answers are slow), between the default and
// MaxAdaptiveConcurrency, and halves on a 429.
type slots struct {
	mu       sync.Mutex
	limit    int
	used     int
	waiters  []chan struct{}
	adaptive bool
	min, max int
	latency  time.Duration // moving average of an attempt's time in flight
}

func newSlots(concurrency int) *slots {
	if concurrency > 0 {
		return &slots{limit: concurrency, min: concurrency, max: concurrency}
	}
	return &slots{limit: DefaultConcurrency, min: DefaultConcurrency, max: MaxAdaptiveConcurrency, adaptive: true}
}

// acquire waits for a slot.
func (s *slots) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.used < s.limit && len(s.waiters) == 0 {
		s.used++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil // handed over: counted in used by whoever closed ch
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Handed over as ctx ended: give the slot back.
		s.used--
		s.wake()
		return ctx.Err()
	}
}

// release frees a slot.
func (s *slots) release() {
	s.mu.Lock()
	s.used--
	s.wake()
	s.mu.Unlock()
}

// wake hands free slots to waiters, in order. Callers hold mu.
func (s *slots) wake() {
	for s.used < s.limit && len(s.waiters) > 0 {
		close(s.waiters[0])
		s.waiters = s.waiters[1:]
		s.used++
	}
}

// answered adapts the limit to one attempt: took is its time in flight, pace the rate
// the host's quota allows (0 when the server said nothing, which leaves the limit
// alone), throttled whether it was answered 429.
func (s *slots) answered(took time.Duration, pace float64, throttled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latency == 0 {
		s.latency = took
	} else {
		s.latency += (took - s.latency) / 5
	}
	if !s.adaptive {
		return
	}
	switch {
	case throttled:
		s.limit = max(s.min, s.limit/2)
	case pace > 0:
		// A fifth more than the quota needs, so that one slow answer does not idle it.
		need := int(math.Ceil(pace*s.latency.Seconds()*1.2)) + 1
		s.limit = min(s.max, max(s.min, need))
	}
	s.wake()
}

// backlog is how long queued requests wait for slots at the latency answers take: a
// rough measure, 0 until an answer's time is known.
func (s *slots) backlog(queued int64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit < 1 || queued <= int64(s.limit) {
		return 0
	}
	return time.Duration(float64(queued-int64(s.limit)) / float64(s.limit) * float64(s.latency))
}

// current reports the slots in use and the limit, for metrics and tests.
func (s *slots) current() (used, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.limit
}
