package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// stopping owns how a run or a replay ends early, in two steps. The stop ends planning
// and the start of new units: the caller's context ends (a signal), or the run stops
// itself (its store stayed down past its wait). In-flight units go on under the work
// context until the grace after the stop is spent; then it ends too, cutting what is
// left, and from then on a run waits for its store no more, bookkeeping included.
//
// It holds the two contexts because they are its subject: every piece of the engine
// that must tell "stop starting" from "stop now" asks it, instead of being handed both.
// A nil *stopping (a pool's worker, whose units the pool stops one by one) never stops.
type stopping struct {
	ctx    context.Context // ends at the stop, with its cause
	stop   context.CancelCauseFunc
	work   context.Context // ends grace after the stop
	cut    context.CancelFunc
	timers func() bool
}

// newStopping starts the lifetime of a run or replay under parent, whose end stops it;
// in-flight work gets grace after the stop. Close releases it.
func newStopping(parent context.Context, grace time.Duration, log *slog.Logger) *stopping {
	s := &stopping{}
	s.ctx, s.stop = context.WithCancelCause(parent)
	s.work, s.cut = context.WithCancel(context.WithoutCancel(parent))
	s.timers = context.AfterFunc(s.ctx, func() {
		if s.handedBack() {
			return // dropped, not stopped: nothing to wait for
		}
		log.Warn("stopping: no new units; in-flight units may finish", "grace", grace)
		time.AfterFunc(grace, s.cut)
	})
	return s
}

// Context ends at the stop; its cause says why (context.Cause).
func (s *stopping) Context() context.Context { return s.ctx }

// Stop stops the run with cause, as a signal would.
func (s *stopping) Stop(cause error) {
	if s != nil {
		s.stop(cause)
	}
}

// Stopping is closed at the stop (tasks.Env.Stopping); nil never closes.
func (s *stopping) Stopping() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.ctx.Done()
}

// Cut is closed once the grace after the stop is spent; nil never closes.
func (s *stopping) Cut() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.work.Done()
}

// IsCut reports whether the grace after the stop is spent.
func (s *stopping) IsCut() bool { return s != nil && s.work.Err() != nil }

// Work is the context in-flight units run under: it ends when the grace is spent. For
// a nil *stopping it is ctx, the unit's own.
func (s *stopping) Work(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	return s.work
}

// ErrHandedBack, as the cause of a run's cancelled context, drops the run rather than
// stopping it: nothing more of it is recorded and its queued units stay queued, so that
// it reads as a run whose process is gone, for another to adopt (Run).
var ErrHandedBack = errors.New("engine: the run is handed back")

// handedBack reports whether the run was dropped (ErrHandedBack): from then on it
// records nothing. A nil *stopping never is.
func (s *stopping) handedBack() bool {
	return s != nil && errors.Is(context.Cause(s.ctx), ErrHandedBack)
}

// Close releases the stopping's timers and contexts; work still in flight is cut.
func (s *stopping) Close() {
	s.timers()
	s.stop(nil)
	s.cut()
}
