package retry

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

// SummaryEvery is how often at most the handler logs, per host, the line that sums up
// its retries (the retries themselves are logged at debug level).
const SummaryEvery = 5 * time.Second

// summaryLen is the longest a summary line's message gets: with a terminal log's time
// before it, it fits 80 columns.
const summaryLen = 70

// retried is one retry, as a summary counts it.
type retried struct {
	status int
	class  dlq.Class
	hint   time.Duration // the server's Retry-After (or like) delay; 0 for none
	wait   time.Duration // the delay before the next attempt
}

// hostRetries sums up a host's retries over a window of time.
type hostRetries struct {
	host    string
	n       int
	since   time.Time
	until   time.Time
	causes  map[string]int // by status ("503"), or class when there was none ("timeout")
	maxHint time.Duration
	maxWait time.Duration
}

// summaries gathers retries per host into at most one line per host every `every`. It is
// a pure bookkeeper: the caller tells it the time and logs what it returns. Safe for
// concurrent use.
type summaries struct {
	every   time.Duration
	pending atomic.Int64 // retries not yet summed up in a returned line
	mu      sync.Mutex
	hosts   map[string]*hostRetries
}

func newSummaries(every time.Duration) *summaries {
	return &summaries{every: every, hosts: map[string]*hostRetries{}}
}

// add counts a retry to host at now, and returns the summaries that are due.
func (s *summaries) add(now time.Time, host string, r retried) []hostRetries {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hosts[host]
	if h == nil {
		h = &hostRetries{host: host, since: now, causes: map[string]int{}}
		s.hosts[host] = h
	}
	h.n++
	key := strconv.Itoa(r.status)
	if r.status == 0 {
		key = string(r.class)
	}
	h.causes[key]++
	h.maxHint = max(h.maxHint, r.hint)
	h.maxWait = max(h.maxWait, r.wait)
	s.pending.Add(1)
	return s.take(now, false)
}

// due returns the summaries of the hosts whose retries have been gathered for `every`.
func (s *summaries) due(now time.Time) []hostRetries {
	if s.pending.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take(now, false)
}

// flush returns every pending summary, due or not: the run ended.
func (s *summaries) flush(now time.Time) []hostRetries {
	if s.pending.Load() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take(now, true)
}

// take removes and returns the hosts' summaries that are due at now (all, with all),
// ordered by host. The caller holds s.mu.
func (s *summaries) take(now time.Time, all bool) []hostRetries {
	var out []hostRetries
	for k, h := range s.hosts {
		if all || now.Sub(h.since) >= s.every {
			h.until = now
			out = append(out, *h)
			s.pending.Add(-int64(h.n))
			delete(s.hosts, k)
		}
	}
	slices.SortFunc(out, func(a, b hostRetries) int { return cmp.Compare(a.host, b.host) })
	return out
}

// String is the summary as one line of at most summaryLen runes:
//
//	127.0.0.1:8090: 12 retries in 5s (9×503, 3×429 Retry-After 2s), max wait 4.1s
//
// dropping first the Retry-After, then the rarer causes, then cutting the host's name.
func (h hostRetries) String() string {
	type cause struct {
		key string
		n   int
	}
	var cs []cause
	for k, n := range h.causes {
		cs = append(cs, cause{k, n})
	}
	slices.SortFunc(cs, func(a, b cause) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.key, b.key)) })
	window := h.until.Sub(h.since).Round(time.Second)
	if window < time.Second {
		window = time.Second
	}
	line := func(keep int, hint bool) string {
		parts := make([]string, 0, keep+1)
		for _, c := range cs[:keep] {
			p := fmt.Sprintf("%d×%s", c.n, c.key)
			if hint && c.key == "429" && h.maxHint > 0 {
				p += " Retry-After " + roundWait(h.maxHint).String()
			}
			parts = append(parts, p)
		}
		if keep < len(cs) {
			parts = append(parts, "…")
		}
		noun := "retries"
		if h.n == 1 {
			noun = "retry"
		}
		return fmt.Sprintf("%s: %d %s in %s (%s), max wait %s", hostName(h.host), h.n, noun,
			window, strings.Join(parts, ", "), roundWait(h.maxWait))
	}
	s := line(len(cs), true)
	for keep := len(cs); len([]rune(s)) > summaryLen && keep > 0; keep-- {
		s = line(keep, false)
	}
	if r := []rune(s); len(r) > summaryLen {
		s = string(r[:summaryLen-1]) + "…"
	}
	return s
}

// attrs are the summary's figures for a log line: a text log leaves them out (the message
// says them), a JSON one keeps them.
func (h hostRetries) attrs() slog.Attr {
	causes := make(map[string]int, len(h.causes))
	maps.Copy(causes, h.causes)
	return slog.Group("summary", "host", h.host, "retries", h.n, "since", h.since, "until", h.until,
		"causes", causes, "max_retry_after", h.maxHint, "longest_wait", h.maxWait)
}

// logSummaries logs each summary at info level.
func (h *Handler) logSummaries(ctx context.Context, ss []hostRetries) {
	for _, s := range ss {
		h.log.LogAttrs(ctx, slog.LevelInfo, s.String(), s.attrs())
	}
}

// FlushRetrySummaries logs the summaries of the retries not yet summed up (a run ended
// before their host's next summary was due). Safe for concurrent use.
func (h *Handler) FlushRetrySummaries(ctx context.Context) {
	h.logSummaries(ctx, h.sums.flush(h.clock.Now()))
}

// hostName is a host's key without its scheme: what a person calls it.
func hostName(key string) string {
	if i := strings.Index(key, "://"); i >= 0 {
		return key[i+3:]
	}
	return key
}

// roundWait rounds a wait for a person: tenths of a second under a minute, seconds above.
func roundWait(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
