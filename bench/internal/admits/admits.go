// Package admits counts what a rate-limited server admitted and refused, and when, for
// the benchmarks that measure quota use and 429s (bench/sharedquota, bench/pool).
package admits

import (
	"math"
	"net/http"
	"sync"
	"time"
)

// Counter records each request a wrapped handler answered: refused (429) or admitted,
// with the admissions' times. It is safe for concurrent use.
type Counter struct {
	mu        sync.Mutex
	first     time.Time
	admits    []time.Time
	requests  int
	throttled int
}

// Totals returns the requests answered, those refused with 429, and when the first came.
func (c *Counter) Totals() (requests, throttled int, first time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.throttled, c.first
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Wrap counts what h answers.
func (c *Counter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.first.IsZero() {
			c.first = now
		}
		c.requests++
		if sw.code == http.StatusTooManyRequests {
			c.throttled++
			return
		}
		c.admits = append(c.admits, now)
	})
}

// Used is the share of a quota of quota requests per second that the requests admitted
// from since to the last one took. The window of the last admission counts whole: the
// quota of its second was there to use.
func (c *Counter) Used(since time.Time, quota int) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, last := 0, time.Time{}
	for _, t := range c.admits {
		if !t.Before(since) {
			n++
			last = t
		}
	}
	if n == 0 {
		return 0
	}
	end := last.Truncate(time.Second).Add(time.Second)
	return math.Min(float64(n)/(float64(quota)*end.Sub(since).Seconds()), 1)
}
