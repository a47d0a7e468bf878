package retry

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"
)

// HostStats is what the requests of one tally asked of one host and how it went.
type HostStats struct {
	Host     string // scheme://host:port
	Requests int64  // requests sent, retries included; a request the breaker held back is not sent
	Retries  int64
	// RateLimited counts the answers 429 Too Many Requests.
	RateLimited int64
	// Waited is the time the requests were held back before they were sent (pacing,
	// a server's Retry-After) and slept before retries (backoff, an open breaker's
	// cool-down); the wait for a concurrency slot is not in it.
	Waited time.Duration
	// BreakerOpened counts the times the host's circuit breaker opened on the verdict
	// of one of these requests.
	BreakerOpened int64
}

// count adds a request answered with status (0 for none), whose verdict opened the
// host's breaker when opened.
func (s *HostStats) count(status int, opened bool) {
	s.Requests++
	if status == http.StatusTooManyRequests {
		s.RateLimited++
	}
	if opened {
		s.BreakerOpened++
	}
}

type tallyKey struct{}

// Tally counts what the requests Handler.Do sends under one context asked of each host:
// one unit's figures, apart from those of the other units sharing the Handler. It is safe
// for concurrent use.
type Tally struct {
	mu    sync.Mutex
	hosts map[string]*HostStats
}

// CountRequests returns a context under which Handler.Do counts into a new Tally, and the
// Tally. A context that counts already gets a Tally of its own: the innermost counts.
func CountRequests(ctx context.Context) (context.Context, *Tally) {
	t := &Tally{}
	return context.WithValue(ctx, tallyKey{}, t), t
}

// Hosts returns the figures of every host asked, in the order of their names; none for a
// nil Tally. It is safe to call while requests are being sent.
func (t *Tally) Hosts() []HostStats {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]HostStats, 0, len(t.hosts))
	for _, s := range t.hosts {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b HostStats) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// Requests is the number of requests sent, all hosts together; 0 for a nil Tally.
func (t *Tally) Requests() int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for _, s := range t.hosts {
		n += s.Requests
	}
	return n
}

// TallyOf is the Tally ctx counts into (the innermost CountRequests); nil when ctx does
// not count.
func TallyOf(ctx context.Context) *Tally {
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	return t
}

// add applies f to the host's figures; a nil Tally counts nothing.
func (t *Tally) add(host string, f func(*HostStats)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.hosts[host]
	if s == nil {
		if t.hosts == nil {
			t.hosts = map[string]*HostStats{}
		}
		s = &HostStats{Host: host}
		t.hosts[host] = s
	}
	f(s)
}

// wait sleeps d on the Handler's clock, ending at once when ctx is done, and adds what
// it waited to the host's figures in ctx's Tally.
func (h *Handler) wait(ctx context.Context, host string, d time.Duration) error {
	err := sleep(ctx, h.clock, d)
	if err == nil && d > 0 {
		TallyOf(ctx).add(host, func(s *HostStats) { s.Waited += d })
	}
	return err
}
