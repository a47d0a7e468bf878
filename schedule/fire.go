package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/store"
)

// maxQueued caps the fires of one flow waiting their turn in a process (overlap: queue);
// more are recorded as skipped.
const maxQueued = 16

// fire claims the fire of f at at and, when this process wins it, applies the overlap
// policy and runs it. Everything that happens to the fire is recorded on it.
func (s *Scheduler) fire(ctx, runCtx context.Context, f *flows.Flow, at time.Time, catchup bool) {
	log := s.log.With("flow", f.Name, "scheduled_for", at.Format(time.RFC3339))
	// Bookkeeping outlives shutdown: a claimed fire must say what became of it.
	final := context.WithoutCancel(ctx)
	mark := func(status string, runID int64, msg string) {
		if err := s.o.Store.MarkFire(final, f.Name, at, status, runID, msg); err != nil {
			log.Error("recording the fire", "status", status, "err", err)
		}
	}
	won, err := s.o.Store.ClaimFire(final, f.Name, at, s.o.Instance, catchup)
	if err != nil {
		log.Error("cannot claim the fire; it is left to other instances", "err", err)
		s.o.Metrics.fire(f.Name, "error")
		return
	}
	if !won {
		log.Debug("fire claimed by another instance")
		s.o.Metrics.fire(f.Name, "claimed_elsewhere")
		return
	}
	lock, ok := s.acquire(ctx, f, at, log, mark)
	if !ok {
		return
	}
	if lock != nil { // nil for overlap: allow
		defer lock.Release()
	}

	s.mu.Lock()
	s.state(f.Name).running++
	s.mu.Unlock()
	s.o.Metrics.running(f.Name, 1)
	defer func() {
		s.mu.Lock()
		s.state(f.Name).running--
		s.mu.Unlock()
		s.o.Metrics.running(f.Name, -1)
	}()
	mark(store.FireRunning, 0, "")
	log.Info("fire", "catchup", catchup)
	res, err := s.o.Run(runCtx, f, at)
	if err != nil {
		log.Error("the scheduled run could not start", "err", err)
		mark(store.FireFailed, 0, err.Error())
		s.o.Metrics.fire(f.Name, "failed")
		return
	}
	mark(store.FireRan, res.RunID, "")
	s.o.Metrics.fire(f.Name, "ran")
	s.o.Metrics.ObserveRun(f.Name, res)
}

// acquire applies f's overlap policy to a claimed fire. It returns the flow lock to hold
// while the run goes (nil for overlap: allow) and whether to run at all; when not, the fire
// is already recorded as skipped or cancelled.
func (s *Scheduler) acquire(ctx context.Context, f *flows.Flow, at time.Time, log *slog.Logger,
	mark func(status string, runID int64, msg string)) (store.FlowLock, bool) {
	if f.Overlap == OverlapAllow {
		return nil, true
	}
	s.mu.Lock()
	queueing := f.Overlap == OverlapQueue && len(s.state(f.Name).waiting) > 0
	s.mu.Unlock()
	var err error
	if !queueing { // else the fire waits behind those already queued
		var (
			lock store.FlowLock
			busy bool
		)
		lock, busy, err = s.tryLock(ctx, f.Name)
		if err == nil && !busy {
			return lock, true
		}
	}
	status, msg := busyVerdict(f.Overlap, err, ctx.Err() != nil)
	if status == store.FireQueued {
		return s.queue(ctx, f, at, log, mark)
	}
	if status == store.FireSkippedOverlap {
		if err != nil {
			log.Error("fire skipped", "err", err)
		} else {
			log.Warn("fire skipped: the previous run of the flow is still going", "overlap", f.Overlap)
		}
	}
	mark(status, 0, msg)
	s.o.Metrics.fire(f.Name, status)
	return nil, false
}

// busyVerdict decides what becomes of a claimed fire of a flow whose overlap policy is
// skip or queue when the fire did not take the flow's lock at once. lockErr is why the
// lock could not be asked for; nil means a run of the flow is going, or fires queued
// before this one wait for it. shuttingDown tells whether the scheduler's context has
// ended. The verdict is a fire status, FireQueued (wait in the flow's queue),
// FireSkippedOverlap or FireCancelled, and for the last two the message to record.
func busyVerdict(overlap string, lockErr error, shuttingDown bool) (status, msg string) {
	switch {
	case lockErr != nil && shuttingDown:
		// Shutdown came while the fire was being claimed.
		return store.FireCancelled, "shutdown came before the fire could start"
	case lockErr != nil:
		return store.FireSkippedOverlap, "cannot tell whether the previous run is still going: " + lockErr.Error()
	case overlap != OverlapQueue:
		return store.FireSkippedOverlap, "the previous run of the flow is still going"
	}
	return store.FireQueued, ""
}

// queue holds a fire of a flow with overlap: queue until its turn: fires of one flow take
// their turn in order within this process, each when the flow's lock is free. It returns
// the flow's lock and true, or false when the fire was skipped (too many queued) or
// cancelled by shutdown, as recorded on it.
func (s *Scheduler) queue(ctx context.Context, f *flows.Flow, at time.Time, log *slog.Logger,
	mark func(status string, runID int64, msg string)) (store.FlowLock, bool) {
	s.mu.Lock()
	st := s.state(f.Name)
	waiting, ok := enqueue(st.waiting, at)
	st.waiting = waiting
	s.mu.Unlock()
	if !ok {
		log.Warn("fire skipped: too many fires of the flow are queued", "queued", maxQueued)
		mark(store.FireSkippedOverlap, 0, fmt.Sprintf("%d fires already queued", maxQueued))
		s.o.Metrics.fire(f.Name, store.FireSkippedOverlap)
		return nil, false
	}
	defer func() {
		s.mu.Lock()
		st := s.state(f.Name)
		st.waiting = dequeue(st.waiting, at)
		s.mu.Unlock()
	}()
	log.Info("fire queued: the previous run of the flow is still going")
	mark(store.FireQueued, 0, "")
	t := time.NewTicker(s.o.QueuePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("queued fire cancelled by shutdown")
			mark(store.FireCancelled, 0, "shutdown came before the previous run ended")
			s.o.Metrics.fire(f.Name, store.FireCancelled)
			return nil, false
		case <-t.C:
		}
		s.mu.Lock()
		first := s.state(f.Name).waiting[0].Equal(at)
		s.mu.Unlock()
		if !first {
			continue
		}
		lock, busy, err := s.tryLock(ctx, f.Name)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("queued fire: checking the previous run", "err", err)
			}
			continue
		}
		if !busy {
			return lock, true
		}
	}
}

// enqueue puts the fire at at in a flow's queue of waiting fires, kept earliest first,
// unless maxQueued fires wait already; it reports whether the fire is in.
func enqueue(waiting []time.Time, at time.Time) ([]time.Time, bool) {
	if len(waiting) >= maxQueued {
		return waiting, false
	}
	i, _ := slices.BinarySearchFunc(waiting, at, time.Time.Compare)
	return slices.Insert(waiting, i, at), true
}

// dequeue takes the fire at at out of a flow's queue of waiting fires, if it is there.
func dequeue(waiting []time.Time, at time.Time) []time.Time {
	if i := slices.IndexFunc(waiting, at.Equal); i >= 0 {
		return slices.Delete(waiting, i, i+1)
	}
	return waiting
}

// tryLock takes the flow's exclusive lock unless a run of the flow is going anywhere: a
// scheduled one (it holds the lock) or a manual one (recorded running, its run locked).
func (s *Scheduler) tryLock(ctx context.Context, flow string) (lock store.FlowLock, busy bool, err error) {
	lock, ok, err := s.o.Store.TryLockFlow(ctx, flow, false)
	if err != nil || !ok {
		return nil, true, err
	}
	running, err := s.o.Store.FlowRunning(ctx, flow)
	if err != nil || running {
		lock.Release()
		return nil, true, err
	}
	return lock, false, nil
}
