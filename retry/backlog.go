package retry

import (
	"net/url"
	"time"
)

// Backlog estimates how long a request to rawURL's host made now would wait in this
// process before it is sent: the requests already waiting for that host, spaced at the
// pace in force (the strictest of the fixed rate, the quota and the adaptive rate, and
// the schedule shared with other processes), or for the host's request slots at the time
// its answers take, or the host's pause (Retry-After, a 429's), whichever is longest. It is 0 for a host not asked yet or not paced.
//
// A pool's worker asks it before it takes a unit: a unit whose host would keep it
// waiting is given back to the queue for that long (snoozed) instead of holding a
// worker's slot while other hosts' units could run.
func (h *Handler) Backlog(rawURL string) time.Duration {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return 0
	}
	h.mu.Lock()
	hs := h.hosts[hostKey(u)]
	h.mu.Unlock()
	if hs == nil {
		return 0
	}
	now := h.clock.Now()
	queued := hs.queued.Load()
	hs.mu.Lock()
	var interval time.Duration
	if r := hs.pacer.current(now); r > 0 {
		interval = time.Duration(float64(time.Second) / r)
	}
	if hs.isShared {
		if iv, _ := hs.pacer.sharedInterval(now); iv > interval {
			interval = iv
		}
	}
	pause := hs.gate.until.Sub(now)
	hs.mu.Unlock()
	// Before the pace is known (the first answers), the queue for the host's request
	// slots says it: requests beyond them wait for answers.
	return max(time.Duration(queued)*interval, hs.sem.backlog(queued), pause, 0)
}
