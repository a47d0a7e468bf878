package schedule_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/schedule"
)

var _ schedule.Clock = (*fakeClock)(nil)

// t0 is when the fake clocks of the tests start: just after 10:00:00, so that @every 1s
// fires first at 10:00:01 and @every 2s at 10:00:02.
var t0 = time.Date(2025, 6, 1, 10, 0, 0, int(300*time.Millisecond), time.UTC)

// at returns the time n seconds after 10:00:00, the whole second before t0.
func at(n float64) time.Time {
	return t0.Truncate(time.Second).Add(time.Duration(n * float64(time.Second)))
}

// fakeClock is a schedule.Clock that moves only when the test moves it. A scheduler's
// fire loop waiting for a fire time is a timer on it, which waitTimers can wait for.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	changed chan struct{} // closed, and replaced, whenever a timer is added
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), ch: ch})
	close(c.changed)
	c.changed = make(chan struct{})
	return ch
}

// set moves the clock on to t and fires the timers due by then, earliest first. Timers
// nobody waits for any more (a stopped fire loop's) fire into their buffer and are gone.
func (c *fakeClock) set(t *testing.T, to time.Time) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if to.Before(c.now) {
		t.Fatalf("fake clock: cannot go back from %v to %v", c.now, to)
	}
	c.now = to
	slices.SortStableFunc(c.timers, func(a, b fakeTimer) int { return a.at.Compare(b.at) })
	n := 0
	for _, tm := range c.timers {
		if tm.at.After(to) {
			break
		}
		tm.ch <- tm.at
		n++
	}
	c.timers = slices.Delete(c.timers, 0, n)
}

// waitTimers waits until n timers are set for exactly when: n fire loops are waiting for
// that fire time. It fails the test after 10s.
func (c *fakeClock) waitTimers(t *testing.T, when time.Time, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		k := 0
		for _, tm := range c.timers {
			if tm.at.Equal(when) {
				k++
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if k >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("fake clock: %d of %d fire loops wait for %v after 10s", k, n, when)
		}
	}
}

// fireAt waits for the fire loops of n schedulers to wait for when, and moves the clock
// there, which makes them fire.
func (c *fakeClock) fireAt(t *testing.T, when time.Time, n int) {
	t.Helper()
	c.waitTimers(t, when, n)
	c.set(t, when)
}
