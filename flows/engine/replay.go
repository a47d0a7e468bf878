package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// ReplayOptions configure Replay. Zero values mean defaults.
type ReplayOptions struct {
	// Store is where the runs are recorded; Runs, Units and DeadLetters are required.
	Store Stores
	// HTTP is the rate-limit handler; required for tasks that fetch.
	HTTP tasks.HTTP
	// Registry holds the task kinds the runs' flow files are loaded with; required.
	Registry *tasks.Registry
	// Secrets, when set, gets the secrets of the flows replayed (flows.Options.Secrets).
	Secrets *redact.Set
	Logger  *slog.Logger
	// Grace is how long in-flight units may take to commit or roll back once ctx is
	// cancelled. Defaults to 30s.
	Grace time.Duration
}

// ReplayOutcome is how the replay of one entry ended.
type ReplayOutcome struct {
	// Entry is the entry as it stands after the replay (a failure updates it).
	Entry dlq.Entry
	OK    bool
	// Error says why the entry is still open; "" when OK.
	Error string
	// NotSent marks an entry whose unit the replay did not send: its host's circuit
	// breaker stayed open for as long as the unit could wait (Error says which host and
	// its last failure). It did not fail again; it is still open.
	NotSent bool
}

// ReplayResult is the outcome of a replay.
type ReplayResult struct {
	Outcomes []ReplayOutcome // in the order of the entries given
	// Units counts the units executed, children planned during the replay included;
	// Dead and Interrupted are those of them that failed again or were cut short, and
	// NotSent those that failed without being sent (their host's breaker stayed open):
	// not among Dead.
	Units, Dead, Interrupted, NotSent int64
	// Notes are things a person should know, such as downstream tasks left to rerun.
	Notes []string
	// Incomplete lists the runs the replay left incomplete: their units replayed, but a
	// task's evidence still does not add up (its finish still finds features missing).
	Incomplete []int64
}

// OK reports whether every entry was replayed and every unit it planned succeeded.
func (r *ReplayResult) OK() bool {
	for _, o := range r.Outcomes {
		if !o.OK {
			return false
		}
	}
	return r.Dead == 0 && r.Interrupted == 0 && r.NotSent == 0
}

// Replay executes the units of dead-letter entries again, exactly as their runs did:
// each run's recorded flow is parsed again (not the file, which may have changed since;
// a difference is reported in the result's notes), each task built from it, and each unit (its key,
// bbox and spec as recorded) executed under its original run id, through opts.HTTP and
// opts.Store, so that a success commits the unit's data and its done state together.
// Units that a replayed unit plans (a tile that splits) are executed too, until none are
// left. A unit that succeeds marks its entry replayed; one that fails updates its entry
// (and a failing child gets an entry of its own). A run being executed by another process
// is not touched. Afterwards, the tasks and runs that no longer have failed units are
// recorded done.
//
// The error is non-nil only when the replay could not be carried out at all; per-entry
// failures are in the result.
func Replay(ctx context.Context, entries []dlq.Entry, opts ReplayOptions) (*ReplayResult, error) {
	if err := opts.Store.check(); err != nil {
		return nil, err
	}
	if opts.Registry == nil {
		return nil, errors.New("engine: no task registry to load flow files with")
	}
	log := cmp.Or(opts.Logger, slog.Default())
	grace := cmp.Or(opts.Grace, 30*time.Second)
	if _, err := opts.Store.Runs.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrating the database: %w", err)
	}
	stop := newStopping(ctx, grace, log)
	defer stop.Close()
	ctx = stop.Context()

	res := &ReplayResult{Outcomes: make([]ReplayOutcome, len(entries))}
	byRun := map[int64][]int{} // run id -> indexes into entries
	var runs []int64
	for i, e := range entries {
		res.Outcomes[i] = ReplayOutcome{Entry: e}
		if _, ok := byRun[e.RunID]; !ok {
			runs = append(runs, e.RunID)
		}
		byRun[e.RunID] = append(byRun[e.RunID], i)
	}
	slices.Sort(runs)
	for _, id := range runs {
		if ctx.Err() != nil {
			break
		}
		rp := &replayer{opts: opts, log: log.With("run", id), res: res, stop: stop}
		if err := rp.run(ctx, id, byRun[id]); err != nil {
			for _, i := range byRun[id] {
				if o := &res.Outcomes[i]; !o.OK && o.Error == "" {
					o.Error = err.Error()
				}
			}
		}
	}
	for i := range res.Outcomes {
		if o := &res.Outcomes[i]; !o.OK && o.Error == "" {
			o.Error = "not replayed: interrupted"
		}
	}
	return res, nil
}

// replayer replays the entries of one run.
type replayer struct {
	opts ReplayOptions
	log  *slog.Logger
	res  *ReplayResult
	stop *stopping  // the replay's, shared by its runs
	mu   sync.Mutex // guards res
}

func (rp *replayer) run(ctx context.Context, runID int64, idx []int) error {
	st := rp.opts.Store
	final := context.WithoutCancel(ctx)
	hold, err := st.Runs.HoldRun(ctx, runID)
	if err != nil {
		return err
	}
	defer hold.Close()
	info, err := st.Runs.RunInfo(ctx, runID)
	if err != nil {
		return err
	}
	f, err := rp.flow(info)
	if err != nil {
		return err
	}
	r := newRunner(f, RunOptions{Store: st, HTTP: rp.opts.HTTP, Logger: rp.log, Area: info.Area}, rp.log, runID)
	r.replaying = true
	r.stop = rp.stop

	byTask := map[string][]int{}
	var order []string
	for _, i := range idx {
		task := rp.res.Outcomes[i].Entry.Task
		if _, ok := byTask[task]; !ok {
			order = append(order, task)
		}
		byTask[task] = append(byTask[task], i)
	}
	for _, id := range order {
		if ctx.Err() != nil {
			return nil
		}
		t := f.Task(id)
		if t == nil {
			rp.fail(byTask[id], fmt.Sprintf("flow %q no longer has task %q", f.Name, id))
			continue
		}
		err := rp.task(ctx, r, t, runID, byTask[id])
		var fin *finishError
		var inc *tasks.IncompleteError
		if errors.As(err, &fin) && errors.As(err, &inc) {
			// The units replayed, but the task's finish still finds the harvest short:
			// the task stays incomplete, with the finish's reason.
			if err := rp.settleTask(final, runID, t, fin); err != nil {
				rp.log.Error("recording the task after the replay", "task", id, "err", err)
			}
			continue
		}
		if errors.As(err, &fin) {
			// The units are done, but the task's finish needs a decision (the mirror's
			// safety rail): the task stays failed, for a resume that allows it.
			if err := st.Runs.SetTaskState(final, runID, t.ID, t.Type, store.Failed, fin.Error()); err != nil {
				rp.log.Error("recording the task after the replay", "task", id, "err", err)
			}
			continue
		}
		if err != nil {
			rp.fail(byTask[id], err.Error())
			continue
		}
		if err := rp.settleTask(final, runID, t, nil); err != nil {
			rp.log.Error("recording the task after the replay", "task", id, "err", err)
		}
	}
	if err := rp.settleRun(final, info, f); err != nil {
		rp.log.Error("recording the run after the replay", "err", err)
	}
	return nil
}

// finishError is a task's finish that failed it after its units were replayed.
type finishError struct{ error }

func (e *finishError) Unwrap() error { return e.error }

// flow is the flow a run recorded, parsed again; for runs recorded before flows were
// kept, the file it named. A file that has changed since the run is reported in the notes.
func (rp *replayer) flow(info store.RunInfo) (*flows.Flow, error) {
	f, err := recordedFlow(info, flows.Options{Registry: rp.opts.Registry, Secrets: rp.opts.Secrets})
	if err == nil && info.FlowText != "" && info.FlowFile != "" {
		if cur, rerr := os.ReadFile(info.FlowFile); rerr == nil && string(cur) != info.FlowText {
			rp.note(fmt.Sprintf("run %d: %s has changed since the run; replayed with the flow the run recorded (%s)",
				info.ID, info.FlowFile, strings.Join(diffLines(info.FlowText, string(cur), 5), "; ")))
		}
	}
	return f, err
}

func (rp *replayer) note(s string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.res.Notes = append(rp.res.Notes, s)
}

func (rp *replayer) fail(idx []int, msg string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, i := range idx {
		if !rp.res.Outcomes[i].OK && rp.res.Outcomes[i].Error == "" {
			rp.res.Outcomes[i].Error = msg
		}
	}
}

// task replays the entries idx, all of task t of run runID, through the runner's workers.
func (rp *replayer) task(ctx context.Context, r *runner, t *flows.Task, runID int64, idx []int) error {
	st := rp.opts.Store
	final := context.WithoutCancel(ctx)
	task, err := t.Config.New(t.ID)
	if err != nil {
		return fmt.Errorf("building task %q: %w", t.ID, err)
	}
	env := r.env(t)
	entryOf := map[string]int{} // unit key -> index of its entry
	var units []store.Unit
	for _, i := range idx {
		e := rp.res.Outcomes[i].Entry
		ref := store.UnitRef{RunID: runID, TaskID: t.ID, Key: e.Unit}
		u, state, err := st.Units.Unit(ctx, ref)
		if err != nil {
			rp.fail([]int{i}, err.Error())
			continue
		}
		if state == store.Done {
			// A resume did it already; only the entry was left open.
			rp.ok(final, i, "already done")
			continue
		}
		entryOf[u.Key] = i
		units = append(units, u)
	}
	if len(units) == 0 {
		return nil
	}
	rp.log.Info("replaying dead letters", "task", t.ID, "units", len(units))
	r.drain(ctx, task, env, units, workers(t), nil, func(u store.Unit, state store.State) {
		var ns *retry.Unsent
		if v, ok := r.unsent.LoadAndDelete(u.Key); ok && state == store.Failed {
			ns = v.(*retry.Unsent)
		}
		rp.count(state, ns != nil)
		i, isEntry := entryOf[u.Key]
		if !isEntry {
			return
		}
		switch {
		case state == store.Done:
			rp.ok(final, i, "")
		case state == store.Interrupted:
			rp.fail([]int{i}, "interrupted by shutdown; replay it again")
		case ns != nil:
			rp.notSent(i, ns)
		case state == store.Failed:
			msg := "failed again"
			if e, err := st.DeadLetters.GetDeadLetter(final, rp.res.Outcomes[i].Entry.ID); err == nil {
				rp.mu.Lock()
				rp.res.Outcomes[i].Entry = e
				rp.mu.Unlock()
				msg = fmt.Sprintf("failed again: %s: %s", e.Class, e.Error)
			}
			rp.fail([]int{i}, msg)
		}
	})
	if !rp.stop.IsCut() {
		open, err := st.Units.OpenUnits(final, runID, t.ID)
		if err != nil {
			return err
		}
		env.UnitsLeft = int64(len(open))
		if err := r.finish(final, task, env); err != nil {
			rp.note(fmt.Sprintf("run %d, task %s: %v", runID, t.ID, err))
			return &finishError{err}
		}
	}
	return nil
}

// count counts a unit the replay executed, which ended in state; notSent marks one that
// failed without being sent.
func (rp *replayer) count(state store.State, notSent bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.res.Units++
	switch {
	case notSent:
		rp.res.NotSent++
	case state == store.Failed:
		rp.res.Dead++
	case state == store.Interrupted:
		rp.res.Interrupted++
	}
}

// notSent records that entry i's unit was not sent: its host's breaker stayed open.
func (rp *replayer) notSent(i int, ns *retry.Unsent) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	o := &rp.res.Outcomes[i]
	o.NotSent = true
	o.Error = notSentMessage(ns)
}

// notSentMessage says why a replay did not send a unit, and that its dead letter stays.
func notSentMessage(ns *retry.Unsent) string {
	return fmt.Sprintf("not sent: host %s breaker open (last failure: %s); still in the dead-letter queue", ns.Host, ns.LastFailure)
}

// ok marks entry i replayed.
func (rp *replayer) ok(ctx context.Context, i int, note string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	o := &rp.res.Outcomes[i]
	item := dlq.ReplayItem{At: time.Now().UTC(), Result: dlq.ReplayOK, Error: note}
	if err := rp.opts.Store.DeadLetters.MarkReplayed(ctx, o.Entry.ID, item); err != nil {
		o.Error = fmt.Sprintf("the unit is done but the entry could not be marked replayed: %v", err)
		return
	}
	o.OK = true
	o.Entry.Status = dlq.StatusReplayed
	o.Entry.History = append(slices.Clone(o.Entry.History), item)
}

// settleTask records a task that failed or was incomplete because of dead units, or of
// its finish (fin, nil when the finish found nothing wrong), as the runner would have
// ended it now: done once no units are left and the finish is content, incomplete while
// what is left is only incomplete, failed otherwise.
func (rp *replayer) settleTask(ctx context.Context, runID int64, t *flows.Task, fin *finishError) error {
	rs := rp.opts.Store
	state, err := rs.Runs.TaskState(ctx, runID, t.ID)
	if err != nil || (state != store.Failed && state != store.Incomplete) {
		return err
	}
	open, err := rs.Units.OpenUnits(ctx, runID, t.ID)
	if err != nil {
		return err
	}
	end := taskEnd{dead: int64(len(open))}
	if fin != nil {
		end.finish = fin.error
	}
	if len(open) > 0 {
		rows, err := rs.DeadLetters.DeadLetterStats(ctx, dlq.Filter{RunID: runID, Task: t.ID, Status: dlq.StatusOpen})
		if err != nil {
			return err
		}
		end.deadByClass = map[dlq.Class]int64{}
		for _, row := range rows {
			end.deadByClass[row.Class] += row.N
		}
	}
	state, msg := end.state()
	return rs.Runs.SetTaskState(ctx, runID, t.ID, t.Type, state, msg)
}

// settleRun records a failed or incomplete run done once all its tasks are (incomplete
// while some task is and none failed), and otherwise refreshes its counts and says which
// downstream tasks are left to run.
func (rp *replayer) settleRun(ctx context.Context, info store.RunInfo, f *flows.Flow) error {
	if info.Status != store.Failed && info.Status != store.Done && info.Status != store.Incomplete {
		return nil // interrupted or running: a resume finishes it
	}
	rs := rp.opts.Store
	states := map[string]store.State{}
	var upstream []string
	for _, t := range f.Tasks {
		st, err := rs.Runs.TaskState(ctx, info.ID, t.ID)
		if err != nil {
			return err
		}
		switch st {
		case store.Pending: // not selected in that run
			continue
		case store.UpstreamFailed:
			upstream = append(upstream, t.ID)
		case store.Done, store.Failed, store.Incomplete:
		default:
			st = store.Failed // running or interrupted: not finished
		}
		states[t.ID] = st
	}
	status := runState(states)
	if len(upstream) > 0 {
		rp.mu.Lock()
		rp.res.Notes = append(rp.res.Notes, fmt.Sprintf("run %d: tasks %v did not run because an upstream task failed; run them with: geoflow run %s --task %s --with-downstream",
			info.ID, upstream, info.FlowFile, upstream[0]))
		rp.mu.Unlock()
	}
	if status == store.Incomplete {
		rp.mu.Lock()
		rp.res.Incomplete = append(rp.res.Incomplete, info.ID)
		rp.mu.Unlock()
	}
	_, err := rs.Runs.FinishRun(ctx, info.ID, status, "")
	return err
}
