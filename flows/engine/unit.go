package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// unit runs one unit to its end and returns the units it planned and how it ended:
// store.Done (its output committed with its done state), store.Failed (a dead letter),
// store.Interrupted, or store.Pending when not even its failure could be recorded (it
// is left for a resume).
//
// Faults are classified by where they happened. A source's failure (the server, the
// network, what it sent) was retried by the rate-limit handler under the host's
// policies; here it becomes a dead letter. A store's failure (the database restarting, a
// full disk) is never the host's: the unit waits for the store to answer again and is
// written again from what it already fetched, or executed again when the fault came
// before its fetch, within its retry policy's max_elapsed.
//
// Units the output lists as Failed are dead-lettered once it has committed; ended is
// called for each with the state it ended in. cause is the error a failed unit was
// dead-lettered with.
func (r *runner) unit(work context.Context, task tasks.Task, env *tasks.Env, u store.Unit, prog *TaskProgress,
	ended func(store.Unit, store.State)) (children []store.Unit, state store.State, cause error) {
	ref := store.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: u.Key}
	// Every request the unit sends is counted, over its executions and the stream
	// its output reads while it is written, apart from the other units' on the same
	// handler, and recorded with its outcome.
	work, _ = retry.CountRequests(work)
	if err := r.opts.Store.Units.StartUnit(work, ref); err != nil {
		// Only the live map shows it: the unit runs all the same.
		env.Logger.Debug("recording a unit as running", "unit", u.Key, "err", err)
	}
	final := context.WithoutCancel(work)
	start := time.Now()
	wait := cmp.Or(env.Retry.MaxElapsed, retry.DefaultMaxElapsed)
	deadline := start.Add(wait)
	var out *tasks.Output
	defer func() { out.Close() }()
	for {
		var err error
		if out == nil {
			if out, err = task.Execute(work, env, u); err != nil {
				out.Close()
				out = nil
			} else {
				// What was fetched gets the whole wait to be written, however long the
				// fetching took (a block of tiles from a paced host takes minutes).
				deadline = time.Now().Add(wait)
			}
		}
		var w written
		if err == nil {
			w, err = r.write(work, env, ref, u, out, follower(task), start, func(f error) dlq.Entry { return r.entry(env, u, f) })
		}
		switch {
		case err == nil && w.redo != nil:
			// The response held more than one response's worth (a tile to split):
			// execute the unit again as the task planned it.
			env.Logger.Debug("unit executed again", "unit", u.Key, "verdict", w.verdict.Kind, "why", w.verdict.Reason)
			out.Close()
			out, u.Spec = nil, w.redo
			continue
		case err == nil:
			state, cause = r.committed(final, env, u, out, w, prog, ended)
			return w.children, state, cause
		case taken(work, err):
			// The pool took the unit back while this worker was silent, and another
			// worker may be executing it: nothing of this execution is recorded.
			env.Logger.Warn("unit taken back by the pool: stopped without writing", "unit", u.Key)
			return nil, store.Interrupted, store.ErrUnitTaken
		case work.Err() != nil && errors.Is(err, context.Canceled):
			// One attempt, not a wait: shutdown has a deadline, and a unit left as it
			// was is run again by a resume all the same.
			if err := r.recordExecution(final, ref); err != nil {
				env.Logger.Error("recording an interrupted unit's requests", "unit", u.Key, "err", err)
			}
			if err := r.opts.Store.Units.EndUnit(final, ref, store.Interrupted, "interrupted by shutdown"); err != nil {
				env.Logger.Error("recording an interrupted unit", "unit", u.Key, "err", err)
			}
			return nil, store.Interrupted, nil
		}
		if f, sink := store.AsFault(err); sink && f.Temporary() && r.waitStore(work, env, f, deadline) {
			if out != nil { // fetched already: written again from what the task holds
				env.Logger.Debug("writing the unit again after a store fault", "unit", u.Key, "class", f.Class)
			}
			continue
		}
		if r.leftForResume(work, err) {
			return nil, store.Interrupted, nil
		}
		prog.failed()
		if ns := retry.NotSent(err); ns != nil && r.replaying {
			r.unsent.Store(u.Key, ns)
		}
		if err := r.persist(final, "recording the unit's requests", func(ctx context.Context) error { return r.recordExecution(ctx, ref) }); err != nil {
			env.Logger.Error("recording a failed unit's requests", "unit", u.Key, "err", err)
		}
		return nil, r.deadLetter(final, env, u, err), err
	}
}

// execution is what the requests counted in ctx (retry.CountRequests) asked of each
// host, as this runner's process sent them.
func (r *runner) execution(ctx context.Context) store.Execution {
	x := store.Execution{Worker: r.opts.Process}
	for _, h := range retry.TallyOf(ctx).Hosts() {
		x.Hosts = append(x.Hosts, store.HostCount{Host: h.Host, Requests: h.Requests, Retries: h.Retries,
			RateLimited: h.RateLimited, WaitedMS: h.Waited.Milliseconds(), BreakerOpened: h.BreakerOpened})
	}
	return x
}

// recordExecution records the execution of a unit that ended without output (failed or
// cut short), in a transaction of its own just before its outcome: its requests count
// however it ended.
func (r *runner) recordExecution(ctx context.Context, ref store.UnitRef) error {
	tx, err := r.opts.Store.Units.BeginUnit(ctx, ref)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := tx.AddExecution(ctx, r.execution(ctx)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// taken tells whether a unit's execution failed because the pool took its unit back: the
// store refused its write, or the worker cancelled it for that.
func taken(ctx context.Context, err error) bool {
	return errors.Is(err, store.ErrUnitTaken) || errors.Is(context.Cause(ctx), store.ErrUnitTaken)
}

// committed settles a unit whose transaction committed: the files it replaced are
// removed, the parts its output listed as failed are dead-lettered, and it ends done, or
// failed when what it stored committed with its dead letter (features refused or
// missing: the harvest shows as incomplete and the unit can be triaged and replayed).
func (r *runner) committed(ctx context.Context, env *tasks.Env, u store.Unit, out *tasks.Output, w written, prog *TaskProgress,
	ended func(store.Unit, store.State)) (store.State, error) {
	r.storeAnswered(env.Logger)
	removeFiles(env, out.Remove)
	for _, f := range out.Failed {
		prog.addTotal(1)
		prog.failed()
		ended(f.Unit, r.deadLetter(ctx, env, f.Unit, f.Err))
	}
	if w.failure != nil {
		prog.finished(w.counts, true)
		e := r.entry(env, u, w.failure)
		env.Logger.Error("unit failed", "unit", u.Key, "class", e.Class, "err", e.Error)
		return store.Failed, w.failure
	}
	if w.verdict.WrittenOff != "" {
		env.Logger.Warn("the server claimed features it did not return, and an observation proved the claim wrong",
			"unit", u.Key, "features", w.verdict.Missing, "evidence", w.verdict.WrittenOff, "claim", w.verdict.Reason)
	}
	prog.finished(w.counts, false)
	return store.Done, nil
}

// written is what a unit's transaction committed.
type written struct {
	counts   store.Counts
	children []store.Unit
	redo     []byte        // set when the verdict on the response asks for the unit to be executed again
	verdict  tasks.Verdict // the verdict on the output's response; Complete when it had none
	failure  error         // the unit's dead letter, committed with what it stored: refused or missing features
}

// follower is the task's planner of what follows a verdict; nil when it has none.
func follower(task tasks.Task) tasks.Follower {
	f, _ := task.(tasks.Follower)
	return f
}

// write drains out into the unit's transaction: features, file rows, a SQL step's
// script, then the unit's done state with its counts and children; all of it commits, or none. A response of
// features is judged once written (tasks.Decide): a Split rolls back and returns the spec
// to execute the unit again with, PageOn plans the rest, and Incomplete (or features the
// stream refused) commits the unit failed with the dead letter fail makes, when fail is
// set.
func (r *runner) write(ctx context.Context, env *tasks.Env, ref store.UnitRef, u store.Unit, out *tasks.Output, fl tasks.Follower, start time.Time,
	fail func(error) dlq.Entry) (written, error) {
	tx, err := r.opts.Store.Units.BeginUnit(ctx, ref)
	if err != nil {
		return written{}, err
	}
	defer tx.Rollback(ctx)
	w := written{counts: out.Counts, children: out.Children}
	if resp := out.Response; resp != nil {
		body, err := resp.Body.Reader()
		if err != nil {
			return w, err
		}
		src := resp.Decoding.Open(body)
		c, err := tx.WriteFeatures(ctx, out.Table, src)
		if err != nil {
			return w, err
		}
		w.counts.Add(c)
		ev := resp.Evidence
		rejected := src.Observe(&ev)
		w.verdict = tasks.Decide(ev)
		w.counts.Filtered = ev.Filtered
		var redo json.RawMessage
		var more []store.Unit
		if fl != nil {
			redo, more = fl.Follow(env, u, ev, w.verdict)
		}
		switch w.verdict.Kind {
		case tasks.Split:
			if redo == nil {
				return w, fmt.Errorf("unit %s: the response must be split (%s) but the task cannot plan it", u.Key, w.verdict.Reason)
			}
			return written{redo: redo, verdict: w.verdict}, nil // rolled back by the deferred Rollback
		case tasks.PageOn:
			w.children = append(w.children[:len(w.children):len(w.children)], more...)
		case tasks.Incomplete:
			w.failure = w.verdict.Err(u.Key)
		case tasks.Complete:
			w.counts.Short += w.verdict.Missing // proven not to exist: the task's check writes them off
		}
		if rejected != nil {
			w.counts.Rejected = int64(rejected.Total)
			if w.failure == nil {
				w.failure = rejected
			} else {
				w.failure = fmt.Errorf("%w; and %w", w.failure, rejected)
			}
		}
	}
	if err := runSQL(ctx, tx, out.SQL, &w.counts); err != nil {
		return w, err
	}
	if len(out.Tiles) > 0 {
		if _, err := tx.UpsertTiles(ctx, out.TileTable, out.Tiles); err != nil {
			return w, err
		}
	}
	for _, row := range out.Assets {
		if _, err := tx.UpsertAsset(ctx, out.AssetTable, row); err != nil {
			return w, err
		}
	}
	x := r.execution(ctx)
	w.counts.Requests = retry.TallyOf(ctx).Requests()
	// The failed units are recorded with the children, but not run.
	if err := tx.Complete(ctx, w.counts, w.children, failedUnits(out.Failed), start); err != nil {
		return w, err
	}
	if err := tx.AddExecution(ctx, x); err != nil {
		return w, err
	}
	if w.failure != nil && fail != nil {
		if err := tx.Fail(ctx, fail(w.failure)); err != nil {
			return w, err
		}
	}
	return w, tx.Commit(ctx)
}

// runSQL runs a SQL step's script, if any, in the unit's transaction, adding the rows
// it affected to c.
func runSQL(ctx context.Context, tx store.UnitTx, s *store.SQLScript, c *store.Counts) error {
	if s == nil {
		return nil
	}
	n, err := tx.ExecSQL(ctx, s)
	c.Affected += n
	return err
}

// removeFiles deletes files a committed unit no longer needs; a failure is logged, not
// the unit's: the rows point at the new files already.
func removeFiles(env *tasks.Env, paths []string) {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			env.Logger.Warn("removing a file the unit replaced", "path", p, "err", err)
		}
	}
}

func failedUnits(fs []tasks.Failure) []store.Unit {
	if len(fs) == 0 {
		return nil
	}
	us := make([]store.Unit, len(fs))
	for i, f := range fs {
		us[i] = f.Unit
	}
	return us
}

// deadLetter records a unit that failed for good: the unit's failed state and its
// dead-letter entry (classified, redacted) commit together. Only the redacted error is
// logged, so no credential reaches the logs either. It returns store.Failed, or
// store.Pending when the store could not take the failure (the unit is then left for a
// resume, which runs it again), or store.Interrupted when the pool took the unit back
// from this worker (another records its outcome).
func (r *runner) deadLetter(ctx context.Context, env *tasks.Env, u store.Unit, err error) store.State {
	ref := store.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: u.Key}
	e := r.entry(env, u, err)
	env.Logger.Error("unit failed", "unit", u.Key, "class", e.Class, "err", e.Error)
	if rerr := r.persist(ctx, "recording a dead letter", func(ctx context.Context) error {
		_, err := r.opts.Store.DeadLetters.RecordDeadLetter(ctx, ref, e)
		return err
	}); errors.Is(rerr, store.ErrUnitTaken) {
		env.Logger.Warn("unit taken back by the pool: its failure is not recorded", "unit", u.Key)
		return store.Interrupted
	} else if rerr != nil {
		env.Logger.Error("the unit's failure could not be recorded; a resume runs it again", "unit", u.Key, "err", rerr)
		r.unrecorded.Add(1)
		return store.Pending
	}
	return store.Failed
}

// entry is the dead letter of unit u that failed with err: classified, redacted of
// credentials and of the flow's secrets, with the replay's history item when replaying.
func (r *runner) entry(env *tasks.Env, u store.Unit, err error) dlq.Entry {
	var classed dlq.Classed
	var detailed dlq.Detailed
	if !errors.As(err, &classed) && !errors.As(err, &detailed) {
		err = retry.Permanent(retry.ClassOf(err), err)
	}
	e := dlq.FromError(err, r.secrets.Values()...)
	e.Flow, e.Task, e.RunID, e.Unit, e.BBox = env.Flow, env.TaskID, env.RunID, u.Key, u.BBox
	if r.replaying {
		e.History = []dlq.ReplayItem{{At: time.Now().UTC(), Result: dlq.ReplayFailed, Class: e.Class, Error: e.Error}}
	}
	return e
}

// persist runs fn, and runs it again while it fails with a temporary store fault and the
// store comes back within the run's store wait (see waitStore): bookkeeping waits out a
// database restart instead of losing what the run did. Once the store wait is spent, fn
// is tried once and not waited for.
func (r *runner) persist(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	for {
		err := fn(ctx)
		if err == nil {
			r.storeAnswered(r.log)
			return nil
		}
		f, sink := store.AsFault(err)
		if !sink || !f.Temporary() {
			return err
		}
		if !r.waitStore(ctx, nil, f, time.Time{}) {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}
