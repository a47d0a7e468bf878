package retry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestBacklog: requests queued for a paced host make a backlog of about their number
// times the pace's spacing; a host not asked yet, or drained, has none.
func TestBacklog(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	h := New(&Options{})
	if d := h.Backlog(srv.URL + "/wfs"); d != 0 {
		t.Fatalf("a host never asked: backlog %s, want 0", d)
	}
	if d := h.Backlog("::not a url"); d != 0 {
		t.Fatalf("an unparsable URL: backlog %s, want 0", d)
	}
	// One request in flight at a time, at most 2 a second: the first holds the slot
	// until released, 9 more queue behind it.
	rl := RateLimit{RequestsPerSecond: 2, Burst: 1, Concurrency: 1}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_ = h.Do(context.Background(), Request{RateLimit: rl, New: get(srv.URL + "/wfs?x=1")}, func(*http.Response) error { return nil })
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	var d time.Duration
	for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if d = h.Backlog(srv.URL + "/other/path"); d >= 4*time.Second {
			break
		}
	}
	// 9 or 10 queued (the first may not have its slot yet) at 500ms apart.
	if d < 4*time.Second || d > 5*time.Second {
		t.Errorf("10 requests queued at 2/s: backlog %s, want 4.5s to 5s", d)
	}
	close(release)
	wg.Wait()
	if d := h.Backlog(srv.URL); d != 0 {
		t.Errorf("drained: backlog %s, want 0", d)
	}
}
