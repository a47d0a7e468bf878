package schedule

import (
	"context"
	"time"
)

// maxCatchup caps the missed fires `catchup: all` makes up: the latest ones.
const maxCatchup = 100

// startCatchup makes up the fires of e missed while no instance was up, counted from the
// flow's last recorded fire; a flow that never fired has missed nothing. s.mu is held.
func (s *Scheduler) startCatchup(ctx, runCtx context.Context, e *entry, now time.Time) {
	f := e.flow
	log := s.log.With("flow", f.Name)
	last, ok, err := s.o.Store.LastFire(ctx, f.Name)
	if err != nil {
		log.Error("catchup: cannot read the last fire; no missed fire is made up", "err", err)
		return
	}
	if !ok {
		return
	}
	missed, dropped := e.sched.Between(last, now, maxCatchup)
	if len(missed) == 0 {
		return
	}
	if f.Catchup == CatchupLast {
		dropped += len(missed) - 1
		missed = missed[len(missed)-1:]
	}
	log.Info("catching up on missed fires", "catchup", f.Catchup, "last_fire", last, "fires", len(missed), "left_out", dropped)
	s.fires.Add(1)
	go func() {
		defer s.fires.Done()
		// In order, each after the previous has ended, so they do not skip each other.
		for _, at := range missed {
			if ctx.Err() != nil {
				return
			}
			s.fire(ctx, runCtx, f, at, true)
		}
	}()
}
