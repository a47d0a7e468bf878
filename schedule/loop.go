package schedule

import (
	"context"
	"time"
)

// startLoop fires e's flow at each of its fire times after from. s.mu is held.
func (s *Scheduler) startLoop(ctx, runCtx context.Context, e *entry, from time.Time) {
	loopCtx, stop := context.WithCancel(ctx)
	e.stop = stop
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		s.loop(loopCtx, ctx, runCtx, e, from)
	}()
}

// loop waits for each fire time of e and hands the fire to a goroutine of its own, so a
// long run never delays the next fire. loopCtx ends with this version of the flow, ctx
// with the schedule.
func (s *Scheduler) loop(loopCtx, ctx, runCtx context.Context, e *entry, last time.Time) {
	log := s.log.With("flow", e.flow.Name)
	for {
		now := s.o.Clock.Now()
		next := e.sched.Next(later(now, last))
		s.mu.Lock()
		e.next = next
		s.mu.Unlock()
		if next.IsZero() {
			log.Warn("the schedule never fires again", "schedule", e.sched.Spec)
			return
		}
		s.o.Metrics.next(e.flow.Name, float64(next.UnixMilli())/1e3)
		select {
		case <-loopCtx.Done():
			return
		case <-s.o.Clock.After(next.Sub(now)):
		}
		if loopCtx.Err() != nil {
			return
		}
		last = next
		s.mu.Lock()
		e.last = next
		s.mu.Unlock()
		s.fires.Add(1)
		go func() {
			defer s.fires.Done()
			s.fire(ctx, runCtx, e.flow, next, false)
		}()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
