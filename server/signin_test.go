package server

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestThrottledFor: a client is throttled once it has made signinFailures failures
// within signinWindow, until the oldest of them is signinWindow old.
func TestThrottledFor(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(secs ...int) []time.Time {
		var out []time.Time
		for _, s := range secs {
			out = append(out, t0.Add(time.Duration(s)*time.Second))
		}
		return out
	}
	tests := []struct {
		name string
		at   []time.Time
		now  time.Time
		want time.Duration
	}{
		{"none", nil, t0, 0},
		{"four", at(0, 1, 2, 3), t0.Add(4 * time.Second), 0},
		{"five at once", at(0, 0, 0, 0, 0), t0, time.Minute},
		{"five, 10 s later", at(0, 1, 2, 3, 4), t0.Add(10 * time.Second), 50 * time.Second},
		{"five, the oldest a minute old", at(0, 1, 2, 3, 4), t0.Add(time.Minute), 0},
		{"five over more than a minute", at(0, 20, 40, 60, 80), t0.Add(80 * time.Second), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := throttledFor(tt.at, tt.now); got != tt.want {
				t.Errorf("throttledFor = %s, want %s", got, tt.want)
			}
		})
	}
}

// clock is a throttle's clock that the test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func wrong() bool { return false }

// TestThrottleSlides: the window frees one failure at a time, a minute after each; a
// valid token does not clear the failures; every other client is counted apart.
func TestThrottleSlides(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	th := newThrottle(c.now)
	for i := range signinFailures {
		a := th.attempt("192.0.2.1", wrong)
		if a.refused != 0 || a.ok || (a.throttles != 0) != (i == signinFailures-1) {
			t.Fatalf("failure %d: %+v", i+1, a)
		}
		c.t = c.t.Add(10 * time.Second)
	}
	// Failures at 0, 10, 20, 30, 40 s; now 50 s.
	if a := th.attempt("192.0.2.1", func() bool { return true }); a.refused != 10*time.Second {
		t.Errorf("50 s after the first failure: %+v, want refused for 10 s", a)
	}
	if a := th.attempt("192.0.2.2", func() bool { return true }); !a.ok {
		t.Errorf("another client: %+v, want it checked", a)
	}
	c.t = c.t.Add(10 * time.Second) // the first failure leaves the window
	if a := th.attempt("192.0.2.1", func() bool { return true }); !a.ok {
		t.Errorf("60 s after the first failure: %+v, want the token checked", a)
	}
	if a := th.attempt("192.0.2.1", wrong); a.throttles != 10*time.Second {
		t.Errorf("a failure with four in the window: %+v, want throttled until the oldest of them, at 10 s, leaves it (10 s)", a)
	}
}

// TestThrottleBounded: the throttle forgets the clients whose failures left the window,
// and past its cap, the one whose last failure is oldest.
func TestThrottleBounded(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	th := newThrottle(c.now)
	th.max = 3
	for i := range 5 {
		th.attempt("192.0.2."+strconv.Itoa(i), wrong)
		c.t = c.t.Add(time.Second)
	}
	if len(th.clients) != 3 || th.recent.Len() != 3 {
		t.Fatalf("%d clients remembered (%d in order), want the cap, 3", len(th.clients), th.recent.Len())
	}
	for _, gone := range []string{"192.0.2.0", "192.0.2.1"} {
		if _, ok := th.clients[gone]; ok {
			t.Errorf("%s, whose last failure is the oldest, is still remembered", gone)
		}
	}
	c.t = c.t.Add(time.Minute)
	th.attempt("192.0.2.9", wrong)
	if len(th.clients) != 1 {
		t.Errorf("%d clients remembered a minute later, want the new one alone", len(th.clients))
	}
}

// TestThrottleConcurrent: attempts of one client at once make signinFailures failures,
// not one more, and throttle it once.
func TestThrottleConcurrent(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	th := newThrottle(c.now)
	var mu sync.Mutex
	var failed, throttles, refused int
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			a := th.attempt("192.0.2.1", wrong)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case a.refused > 0:
				refused++
			default:
				failed++
			}
			if a.throttles > 0 {
				throttles++
			}
		})
	}
	wg.Wait()
	if failed != signinFailures || throttles != 1 || refused != 200-signinFailures {
		t.Errorf("200 attempts at once: %d failed, %d throttled, %d refused; want %d, 1, %d", failed, throttles, refused, signinFailures, 200-signinFailures)
	}
}

// TestClientOf: a client is its address, or for IPv6 its /64.
func TestClientOf(t *testing.T) {
	tests := []struct{ remote, addr, key string }{
		{"192.0.2.7:51234", "192.0.2.7", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:80", "::ffff:192.0.2.7", "::ffff:192.0.2.7"},
		{"@unix", "@unix", "@unix"},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			addr, key := clientOf(&http.Request{RemoteAddr: tt.remote})
			if addr != tt.addr || key != tt.key {
				t.Errorf("clientOf(%q) = %q, %q; want %q, %q", tt.remote, addr, key, tt.addr, tt.key)
			}
		})
	}
}
