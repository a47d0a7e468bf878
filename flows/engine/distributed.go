package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// followEvery is how often the starting process reads a distributed task's tally.
const followEvery = 500 * time.Millisecond

// stallAfter is how long a distributed task may go with units open and none finishing
// before its units are checked for lost jobs (a variable for the tests).
var stallAfter = 10 * time.Second

// follow waits for a distributed task's units, which the pool's workers execute, as drain
// waits for the process's own: it keeps prog current, gives back to the pool the units of
// workers taken for dead, dead-letters units the pool gave up on (worker_lost) and
// enqueues again those whose job is gone, and ends when no unit is open. Once ctx is
// cancelled it withdraws the run's units that no worker has started and waits, until
// work is cancelled too, for those in flight; a run handed back (ErrHandedBack) returns
// at once, its units left queued. It returns how many of the task's units are dead, and
// whether it was cut short.
func (r *runner) follow(ctx context.Context, q store.Queue, env *tasks.Env, prog *TaskProgress) (dead int64, interrupted bool) {
	final := context.WithoutCancel(ctx)
	var (
		last       store.UnitTally
		lastMove   = time.Now()
		lastRescue time.Time
		withdrawn  bool
	)
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	r.checkPool(final, q, env)
	for {
		if r.stop.handedBack() {
			return last.Failed, true // its queued units stay, for whoever takes the run over
		}
		if ctx.Err() != nil {
			r.withdraw(final, q, env, !withdrawn)
			withdrawn = true
		}
		if time.Since(lastRescue) >= store.WorkerReport {
			r.rescue(final, q, env)
			lastRescue = time.Now()
		}
		var t store.UnitTally
		err := r.persist(final, "following the task's units", func(ctx context.Context) error {
			var err error
			t, err = q.TallyUnits(ctx, r.runID, env.TaskID)
			return err
		})
		if err != nil {
			env.Logger.Error("following the task's units", "err", err)
			return last.Failed, true
		}
		prog.set(t)
		if r.takenOver(final) {
			return t.Failed, true
		}
		switch {
		case t.Open() == 0:
			return t.Failed, false
		case withdrawn && t.Running == 0:
			// Units are marked running only once a worker starts them: wait for the
			// jobs workers took too, so that a resume finds none of them in flight
			// (their live job would keep it from enqueueing the unit again).
			if n, err := q.RunningJobs(final, r.runID); err != nil || n == 0 {
				return t.Failed, true
			}
		}
		if t.Done+t.Failed != last.Done+last.Failed || t.Running != last.Running {
			last, lastMove = t, time.Now()
		} else if time.Since(lastMove) > stallAfter && !withdrawn {
			r.checkPool(final, q, env)
			r.recoverLost(final, q, env)
			lastMove = time.Now()
		}
		stopping := ctx.Done()
		if withdrawn {
			stopping = nil
		}
		select {
		case <-tick.C:
		case <-stopping: // withdraw the queued units at once
		case <-r.stop.Cut():
			return t.Failed, true
		}
	}
}

// withdraw withdraws the run's queued units, again at every tick of a run that stops:
// units still in flight enqueue the children they plan, which must not run either. first
// is the first time, which is logged.
func (r *runner) withdraw(ctx context.Context, q store.Queue, env *tasks.Env, first bool) {
	n, err := q.CancelUnits(ctx, r.runID)
	switch {
	case err != nil:
		env.Logger.Error("withdrawing the run's queued units", "err", err)
	case first:
		env.Logger.Warn("stopping: the run's queued units are withdrawn; units in flight on the workers may finish", "withdrawn", n)
	}
}

// rescue gives back to the pool the units of workers taken for dead, as every live worker
// does when it reports: here too, so that a pool whose workers all died, or run an older
// geoflow, has its units back in the queue soon after store.WorkerSilent. A stopping
// run's follower needs them released as well: it waits for no job of the run to be
// running.
func (r *runner) rescue(ctx context.Context, q store.Queue, env *tasks.Env) {
	n, workers, err := q.RescueUnits(ctx)
	switch {
	case err != nil:
		env.Logger.Warn("giving back the units of workers taken for dead", "err", err)
	case n > 0:
		env.Logger.Warn("units of workers taken for dead given back to the pool", "units", n, "workers", workers)
	}
}

// errTakenOver stops a distributed run whose follower lost its hold on it to another
// process: its session with the store ended (a restart of the database, a cut
// connection), the run read as orphaned, and a worker adopted it (or a person resumed
// it). Two must not follow one run, so this one lets go, as a hand-back does.
var errTakenOver = fmt.Errorf("this process lost its hold on the run (its database session ended) and another process took the run over, and finishes it: %w", ErrHandedBack)

// takenOver tells whether another process holds the run now (store.Run.Held), and then
// stops this one's following of it. A hold it cannot check (the store down) counts as
// still held: the store is down for the others too.
func (r *runner) takenOver(ctx context.Context) bool {
	if r.held == nil {
		return false
	}
	if held, err := r.held(ctx); held || err != nil {
		return false
	}
	r.log.Warn("another process took the run over: this one stops following it, recording nothing", "run", r.runID)
	r.stop.Stop(errTakenOver)
	return true
}

// checkPool warns when no worker of the pool is alive: the units wait in the queue until
// one starts, which is easy to forget.
func (r *runner) checkPool(ctx context.Context, q store.Queue, env *tasks.Env) {
	ws, err := q.ListWorkers(ctx)
	if err != nil {
		return
	}
	now := time.Now()
	for _, w := range ws {
		if w.Alive(now) {
			return
		}
	}
	env.Logger.Warn("no worker of the pool is alive: the units wait in the queue until one starts (geoflow worker, on this database)")
}

// recoverLost finds the task's open units that no job will execute: those the pool gave
// up on are dead-lettered (a unit that kills every worker it lands on stops there); the
// others are enqueued again.
func (r *runner) recoverLost(ctx context.Context, q store.Queue, env *tasks.Env) {
	lost, err := q.LostUnits(ctx, r.runID, env.TaskID)
	if err != nil {
		env.Logger.Error("looking for lost units", "err", err)
		return
	}
	var requeue []string
	for _, l := range lost {
		if !l.Given {
			requeue = append(requeue, l.Key)
			continue
		}
		u, _, err := r.opts.Store.Units.Unit(ctx, store.UnitRef{RunID: r.runID, TaskID: env.TaskID, Key: l.Key})
		if err != nil {
			env.Logger.Error("reading a lost unit", "unit", l.Key, "err", err)
			continue
		}
		msg := fmt.Sprintf("the pool gave the unit up after %d attempts: each worker that took it stopped before it ended", l.Attempts)
		if l.Error != "" {
			msg += " (last: " + l.Error + ")"
		}
		r.deadLetter(ctx, env, u, retry.Permanent(dlq.ClassWorkerLost, errors.New(msg)))
	}
	if len(requeue) > 0 {
		env.Logger.Warn("enqueueing units again whose jobs ended without their outcome", "units", len(requeue))
		if err := q.Requeue(ctx, r.runID, env.TaskID, requeue); err != nil {
			env.Logger.Error("enqueueing lost units again", "err", err)
		}
	}
}

// set puts the task's counts as the store tallies them.
func (t *TaskProgress) set(u store.UnitTally) {
	if t == nil {
		return
	}
	t.total.Store(u.Total)
	t.completed.Store(u.Done)
	t.dead.Store(u.Failed)
	t.inserted.Store(u.Counts.Inserted + u.Counts.Updated)
	t.skipped.Store(u.Counts.Skipped)
	t.bytes.Store(u.Counts.Bytes)
}
