package flows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
)

// ReplayOptions configure Replay. Zero values mean defaults.
type ReplayOptions struct {
	// Store is the database; required.
	Store *postgis.Store
	// HTTP is the rate-limit handler; required for tasks that fetch.
	HTTP tasks.HTTP
	// Registry holds the task kinds the runs' flow files are loaded with; required.
	Registry *tasks.Registry
	Logger   *slog.Logger
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
}

// ReplayResult is the outcome of a replay.
type ReplayResult struct {
	Outcomes []ReplayOutcome // in the order of the entries given
	// Units counts the units executed, children planned during the replay included;
	// Dead and Interrupted are those of them that failed or were cut short.
	Units, Dead, Interrupted int64
	// Notes are things a person should know, such as downstream tasks left to rerun.
	Notes []string
}

// OK reports whether every entry was replayed and every unit it planned succeeded.
func (r *ReplayResult) OK() bool {
	for _, o := range r.Outcomes {
		if !o.OK {
			return false
		}
	}
	return r.Dead == 0 && r.Interrupted == 0
}

// Replay executes the units of dead-letter entries again, exactly as their runs did:
// each run's flow file is loaded again, each task built from it, and each unit (its key,
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
	if opts.Store == nil {
		return nil, errors.New("flows: no store")
	}
	if opts.Registry == nil {
		return nil, errors.New("flows: no task registry to load flow files with")
	}
	log := cmp.Or(opts.Logger, slog.Default())
	grace := cmp.Or(opts.Grace, 30*time.Second)
	if _, err := opts.Store.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrating the database: %w", err)
	}
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancelWork) })
	defer stop()

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
		rp := &replayer{opts: opts, log: log.With("run", id), res: res}
		if err := rp.run(ctx, work, id, byRun[id]); err != nil {
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
	mu   sync.Mutex // guards res
}

func (rp *replayer) run(ctx, work context.Context, runID int64, idx []int) error {
	store := rp.opts.Store
	final := context.WithoutCancel(ctx)
	hold, err := store.HoldRun(ctx, runID)
	if err != nil {
		return err
	}
	defer hold.Close()
	info, err := store.RunInfo(ctx, runID)
	if err != nil {
		return err
	}
	if info.FlowFile == "" {
		return fmt.Errorf("run %d recorded no flow file; run the flow again instead", runID)
	}
	f, err := Load(info.FlowFile, Options{Registry: rp.opts.Registry})
	if err != nil {
		return fmt.Errorf("loading the flow of run %d: %w", runID, err)
	}
	if f.Name != info.Flow {
		return fmt.Errorf("run %d was of flow %q but %s now defines flow %q", runID, info.Flow, info.FlowFile, f.Name)
	}
	r := &runner{f: f, opts: RunOptions{Store: store, HTTP: rp.opts.HTTP, Logger: rp.log, Area: info.Area},
		log: rp.log, replaying: true}

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
		if err := rp.task(ctx, work, r, t, runID, byTask[id]); err != nil {
			rp.fail(byTask[id], err.Error())
			continue
		}
		if err := rp.settleTask(final, runID, t); err != nil {
			rp.log.Error("recording the task after the replay", "task", id, "err", err)
		}
	}
	if err := rp.settleRun(final, info, f); err != nil {
		rp.log.Error("recording the run after the replay", "err", err)
	}
	return nil
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
func (rp *replayer) task(ctx, work context.Context, r *runner, t *Task, runID int64, idx []int) error {
	store := rp.opts.Store
	final := context.WithoutCancel(ctx)
	task, err := t.Config.New(t.ID)
	if err != nil {
		return fmt.Errorf("building task %q: %w", t.ID, err)
	}
	env := &tasks.Env{
		Flow: r.f.Name, RunID: runID, TaskID: t.ID, Logger: rp.log.With("task", t.ID),
		HTTP: rp.opts.HTTP, Store: store, Area: r.opts.Area,
		Retry: t.Retry, RateLimit: t.RateLimit,
	}
	entryOf := map[string]int{} // unit key -> index of its entry
	var units []tasks.Unit
	for _, i := range idx {
		e := rp.res.Outcomes[i].Entry
		ref := tasks.UnitRef{RunID: runID, TaskID: t.ID, Key: e.Unit}
		u, state, err := store.Unit(ctx, ref)
		if err != nil {
			rp.fail([]int{i}, err.Error())
			continue
		}
		if state == StateDone {
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
	r.drain(ctx, work, task, env, units, cmp.Or(t.RateLimit.Concurrency, 4), nil, func(u tasks.Unit, state string) {
		rp.mu.Lock()
		rp.res.Units++
		switch state {
		case StateFailed:
			rp.res.Dead++
		case StateInterrupted:
			rp.res.Interrupted++
		}
		rp.mu.Unlock()
		i, isEntry := entryOf[u.Key]
		if !isEntry {
			return
		}
		switch state {
		case StateDone:
			rp.ok(final, i, "")
		case StateInterrupted:
			rp.fail([]int{i}, "interrupted by shutdown; replay it again")
		case StateFailed:
			msg := "failed again"
			if e, err := store.GetDeadLetter(final, rp.res.Outcomes[i].Entry.ID); err == nil {
				rp.mu.Lock()
				rp.res.Outcomes[i].Entry = e
				rp.mu.Unlock()
				msg = fmt.Sprintf("failed again: %s: %s", e.Class, e.Error)
			}
			rp.fail([]int{i}, msg)
		}
	})
	if work.Err() == nil {
		finish(final, task, env)
	}
	return nil
}

// ok marks entry i replayed.
func (rp *replayer) ok(ctx context.Context, i int, note string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	o := &rp.res.Outcomes[i]
	item := dlq.ReplayItem{At: time.Now().UTC(), Result: dlq.ReplayOK, Error: note}
	if err := rp.opts.Store.MarkReplayed(ctx, o.Entry.ID, item); err != nil {
		o.Error = fmt.Sprintf("the unit is done but the entry could not be marked replayed: %v", err)
		return
	}
	o.OK = true
	o.Entry.Status = dlq.StatusReplayed
	o.Entry.History = append(slices.Clone(o.Entry.History), item)
}

// settleTask records a task that failed because of dead units as done once none are left.
func (rp *replayer) settleTask(ctx context.Context, runID int64, t *Task) error {
	store := rp.opts.Store
	st, err := store.TaskState(ctx, runID, t.ID)
	if err != nil || st != StateFailed {
		return err
	}
	open, err := store.OpenUnits(ctx, runID, t.ID)
	if err != nil {
		return err
	}
	if len(open) == 0 {
		return store.SetTaskState(ctx, runID, t.ID, t.Type, StateDone, "")
	}
	return store.SetTaskState(ctx, runID, t.ID, t.Type, StateFailed, fmt.Sprintf("%d units failed", len(open)))
}

// settleRun records a failed run done once all its tasks are, and otherwise refreshes its
// counts and says which downstream tasks are left to run.
func (rp *replayer) settleRun(ctx context.Context, info postgis.RunInfo, f *Flow) error {
	if info.Status != StateFailed && info.Status != StateDone {
		return nil // interrupted or running: a resume finishes it
	}
	store := rp.opts.Store
	status := StateDone
	var upstream []string
	for _, t := range f.Tasks {
		st, err := store.TaskState(ctx, info.ID, t.ID)
		if err != nil {
			return err
		}
		switch st {
		case "", StateDone: // not selected in that run, or done
		case StateUpstreamFailed:
			upstream = append(upstream, t.ID)
			status = StateFailed
		default:
			status = StateFailed
		}
	}
	if len(upstream) > 0 {
		rp.mu.Lock()
		rp.res.Notes = append(rp.res.Notes, fmt.Sprintf("run %d: tasks %v did not run because an upstream task failed; run them with: geoflow run %s --task %s --with-downstream",
			info.ID, upstream, info.FlowFile, upstream[0]))
		rp.mu.Unlock()
	}
	_, err := store.FinishRun(ctx, info.ID, status, "")
	return err
}
