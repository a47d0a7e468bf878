package postgis

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
)

// TestReservePace: bookings of several processes interleave on one schedule, and a
// pause any of them calls holds every booking.
func TestReservePace(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	a, b := openAt(t, url), openAt(t, url)
	const host = "http://parcels.example:80"
	iv := 100 * time.Millisecond
	first, err := a.ReservePace(ctx, host, 3, iv, 1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.ReservePace(ctx, host, 2, iv, 1)
	if err != nil {
		t.Fatal(err)
	}
	// a holds the slots at first, +100ms, +200ms; b's come after them.
	if first > 10*time.Millisecond || second < 250*time.Millisecond || second > 320*time.Millisecond {
		t.Errorf("first booking in %s, second in %s; want at once, then after the first's three slots", first, second)
	}
	if err := a.PausePace(ctx, host, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, err := b.ReservePace(ctx, host, 0, 0, 0); err != nil || d < 1900*time.Millisecond || d > 2*time.Second {
		t.Errorf("pause read by the other process: %s, %v; want about 2s", d, err)
	}
	if d, err := b.ReservePace(ctx, host, 1, iv, 1); err != nil || d < 1900*time.Millisecond {
		t.Errorf("booking during the pause starts in %s, %v; want after the pause", d, err)
	}
	// A shorter pause does not cut the longer one short; another host is not held.
	if err := b.PausePace(ctx, host, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d, _ := a.ReservePace(ctx, host, 0, 0, 0); d < 1800*time.Millisecond {
		t.Errorf("a shorter pause cut the pause to %s", d)
	}
	if d, err := a.ReservePace(ctx, "http://other.example:80", 1, iv, 1); err != nil || d > 10*time.Millisecond {
		t.Errorf("another host waits %s, %v", d, err)
	}
	// After idling, a host with a burst may take that many slots at once.
	if _, err := a.ReservePace(ctx, "http://rested.example:80", 1, iv, 5); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if d, err := a.ReservePace(ctx, "http://rested.example:80", 4, iv, 5); err != nil || d > 0 {
		t.Errorf("rested host with burst 5: 4 slots start in %s, %v; want at once (in the past)", d, err)
	}
}

// TestSharedPacingThreeProcesses: three processes (each its own pool and retry.Handler)
// harvest one host whose quota is 12 requests per fixed one-second window. Pacing alone,
// each bursts into the window the others use and the server answers 429s; paced through
// the database, they keep within the quota together.
func TestSharedPacingThreeProcesses(t *testing.T) {
	url := testdb.URL(t)
	stores := []*Store{openAt(t, url), openAt(t, url), openAt(t, url)}
	harvest := func(t *testing.T, local bool) (attempts, throttled int) {
		q := &windowQuota{limit: 12}
		srv := httptest.NewServer(q)
		defer srv.Close()
		var wg sync.WaitGroup
		for _, st := range stores {
			h := retry.New(&retry.Options{Shared: st})
			for range 6 {
				wg.Go(func() {
					for range 4 {
						err := h.Do(context.Background(), retry.Request{
							RateLimit: retry.RateLimit{Local: local},
							New: func(ctx context.Context) (*http.Request, error) {
								return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/items", nil)
							},
						}, func(r *http.Response) error { _, err := io.Copy(io.Discard, r.Body); return err })
						if err != nil {
							t.Error(err)
						}
					}
				})
			}
		}
		wg.Wait()
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.attempts, q.throttled
	}
	localAttempts, localThrottled := harvest(t, true)
	attempts, throttled := harvest(t, false)
	t.Logf("alone: %d of %d requests answered 429; shared: %d of %d", localThrottled, localAttempts, throttled, attempts)
	// The first answers teach the quota; until then each process sends what it would
	// alone: a few 429s at the start at most.
	if throttled > 5 || 2*throttled >= localThrottled {
		t.Errorf("shared pacing: %d of %d requests answered 429 (pacing alone: %d of %d)", throttled, attempts, localThrottled, localAttempts)
	}
	var bookings int
	if err := stores[0].pool.QueryRow(context.Background(), `SELECT count(*) FROM geoflow_host_pace WHERE interval_s > 0`).Scan(&bookings); err != nil || bookings != 1 {
		t.Errorf("host rows with a pace: %d, %v; want 1", bookings, err)
	}
}

// windowQuota admits limit requests per fixed second of the wall clock and says so in
// X-RateLimit-Limit, -Remaining and -Reset (epoch seconds), with Retry-After on a 429.
type windowQuota struct {
	mu                  sync.Mutex
	limit               int
	window              int64
	used                int
	attempts, throttled int
}

func (q *windowQuota) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	q.mu.Lock()
	if s := now.Unix(); s != q.window {
		q.window, q.used = s, 0
	}
	q.attempts++
	q.used++
	ok := q.used <= q.limit
	if !ok {
		q.throttled++
	}
	remaining, reset := max(q.limit-q.used, 0), q.window+1
	q.mu.Unlock()
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(q.limit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	if !ok {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	time.Sleep(20 * time.Millisecond)
	io.WriteString(w, "{}")
}

func openAt(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}
