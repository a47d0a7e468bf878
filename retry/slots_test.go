package retry

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestSlotsAdapt: without a configured concurrency the slots follow the quota's pace
// times the answers' latency (Little's law), between the default and the maximum, and
// halve on a 429; a configured concurrency never moves.
func TestSlotsAdapt(t *testing.T) {
	s := newSlots(0)
	if _, l := s.current(); l != DefaultConcurrency {
		t.Fatalf("start at %d, want %d", l, DefaultConcurrency)
	}
	for range 20 {
		s.answered(time.Second, 8, false) // 8 req/s allowed, answers of 1 s: 8 needed in flight
	}
	if _, l := s.current(); l != 11 { // ceil(8 x 1 x 1.2) + 1
		t.Errorf("limit %d after slow answers under an 8 req/s quota, want 11", l)
	}
	s.answered(time.Second, 8, true)
	if _, l := s.current(); l != 5 {
		t.Errorf("limit %d after a 429, want halved to 5", l)
	}
	for range 20 {
		s.answered(10*time.Second, 100, false)
	}
	if _, l := s.current(); l != MaxAdaptiveConcurrency {
		t.Errorf("limit %d, want capped at %d", l, MaxAdaptiveConcurrency)
	}
	s.answered(time.Second, 0, false) // the server says nothing: the limit stays
	if _, l := s.current(); l != MaxAdaptiveConcurrency {
		t.Errorf("limit %d moved without a pace", l)
	}
	fixed := newSlots(3)
	for range 20 {
		fixed.answered(10*time.Second, 100, false)
	}
	if _, l := fixed.current(); l != 3 {
		t.Errorf("a configured concurrency moved to %d", l)
	}
}

// TestSlotsSemaphore: no more than the limit in flight, waiters served as the limit
// rises, and a waiter whose context ends takes no slot.
func TestSlotsSemaphore(t *testing.T) {
	s := newSlots(2)
	ctx := context.Background()
	s.acquire(ctx)
	s.acquire(ctx)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := s.acquire(cctx); err == nil {
		t.Fatal("a third slot of two")
	}
	var wg sync.WaitGroup
	got := make(chan struct{}, 1)
	wg.Go(func() {
		if s.acquire(ctx) == nil {
			got <- struct{}{}
		}
	})
	time.Sleep(10 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("a slot before one was released")
	default:
	}
	s.release()
	wg.Wait()
	if used, _ := s.current(); used != 2 {
		t.Errorf("%d in use, want 2", used)
	}
	s.release()
	s.release()
	if used, _ := s.current(); used != 0 {
		t.Errorf("%d in use after all released", used)
	}
}
