package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
)

// TestAttemptTimeouts: a whole response used to be bounded by one fixed 60 s client
// timeout, body included, so a slow server sending a large page failed every attempt,
// classed truncated. Now a body that keeps coming is read to its end however long it
// takes; headers that never come, and a body that stops, end the attempt as a timeout
// (retried), each after its own flow key.
func TestAttemptTimeouts(t *testing.T) {
	var stall atomic.Int64 // requests that stall before recovering
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/steady": // 12 chunks, 150 ms apart: 1.8 s, longer than every timeout below
			for i := range 12 {
				io.WriteString(w, strings.Repeat("x", 1000))
				w.(http.Flusher).Flush()
				if i < 11 {
					time.Sleep(150 * time.Millisecond)
				}
			}
		case "/slowheaders":
			if stall.Add(1) == 1 {
				time.Sleep(2 * time.Second)
			}
			io.WriteString(w, "ok")
		case "/error-stalls":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "<html>busy")
			w.(http.Flusher).Flush()
			time.Sleep(3 * time.Second)
		case "/stops":
			w.Header().Set("Content-Length", "2000")
			io.WriteString(w, strings.Repeat("y", 1000))
			w.(http.Flusher).Flush()
			if stall.Add(1) <= 2 {
				time.Sleep(3 * time.Second) // then the connection closes, cut short
				return
			}
			io.WriteString(w, strings.Repeat("y", 1000))
		}
	}))
	t.Cleanup(srv.Close)
	get := func(path string, p Policy) (int, time.Duration, error) {
		h := New(&Options{Seed: 1})
		var n int
		start := time.Now() // reported, not asserted
		err := h.Do(context.Background(), Request{Unit: "u", Policy: p, New: func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		}}, func(r *http.Response) error {
			b, err := io.ReadAll(r.Body)
			n = len(b)
			return err
		})
		return n, time.Since(start), err
	}
	quick := Policy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond,
		HeaderTimeout: 500 * time.Millisecond, IdleTimeout: 500 * time.Millisecond, AttemptTimeout: time.Minute}

	t.Run("a steady body longer than every timeout", func(t *testing.T) {
		n, _, err := get("/steady", quick)
		if err != nil || n != 12000 {
			t.Fatalf("read %d bytes, %v; want 12000", n, err)
		}
	})
	t.Run("a whole attempt beyond attempt_timeout", func(t *testing.T) {
		p := quick
		p.MaxAttempts, p.AttemptTimeout = 1, time.Second
		_, _, err := get("/steady", p)
		var e *Error
		if !errors.As(err, &e) || e.Class != dlq.ClassTimeout || !strings.Contains(e.Error(), "attempt_timeout 1s") {
			t.Fatalf("err = %v; want a timeout naming attempt_timeout", err)
		}
	})
	t.Run("headers late, then in time", func(t *testing.T) {
		stall.Store(0)
		n, _, err := get("/slowheaders", quick)
		if err != nil || n != 2 || stall.Load() != 2 {
			t.Fatalf("read %d bytes in %d attempts, %v; want the first attempt cut at header_timeout and the second to succeed", n, stall.Load(), err)
		}
	})
	t.Run("an error answer whose body stalls", func(t *testing.T) {
		p := quick
		p.MaxAttempts = 1
		_, _, err := get("/error-stalls", p)
		var e *Error
		if !errors.As(err, &e) || e.Class != dlq.ClassTimeout || e.Status != http.StatusServiceUnavailable || !strings.Contains(e.Error(), "idle_timeout") {
			t.Fatalf("err = %v; want a timeout at idle_timeout, not a wait for attempt_timeout", err)
		}
	})
	t.Run("a body that stops", func(t *testing.T) {
		stall.Store(0)
		p := quick
		p.MaxAttempts = 2
		_, _, err := get("/stops", p)
		var e *Error
		if !errors.As(err, &e) || e.Class != dlq.ClassTimeout || e.Attempts != 2 || !strings.Contains(e.Error(), "idle_timeout 500ms") {
			t.Fatalf("err = %v; want two attempts cut at idle_timeout, classed timeout (not truncated)", err)
		}
	})
}
