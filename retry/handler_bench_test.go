package retry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkDo measures the per-unit cost of Do over a local server: one
// attempt that succeeds, and one 503 retried into a 200, with no pacing and
// no delay, so the figure is the handler's own work plus the loopback round trips.
func BenchmarkDo(b *testing.B) {
	body := []byte(`{"type":"FeatureCollection","features":[]}`)
	read := func(resp *http.Response) error {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	b.Run("ok", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "1000")
			w.Write(body)
		}))
		defer srv.Close()
		h := New(&Options{Seed: 1})
		r := Request{Unit: "bench", New: get(srv.URL)}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := h.Do(ctx, r, read); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("retried", func(b *testing.B) {
		var n atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1)%2 == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, "try again")
				return
			}
			w.Write(body)
		}))
		defer srv.Close()
		// Every unit's first attempt fails: the breaker would open on them.
		h := New(&Options{Seed: 1, Breaker: Breaker{Disabled: true}})
		r := Request{Unit: "bench", New: get(srv.URL), Policy: Policy{BaseDelay: 1, MaxDelay: 1}}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := h.Do(ctx, r, read); err != nil {
				b.Fatal(err)
			}
		}
	})
}
