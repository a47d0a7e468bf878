// Package engine runs flows: a run's tasks in dependency order, each task's units through
// one loop (execute, write in the unit's transaction, judge the response, plan what
// follows), whether the units run in this process, are replayed from dead letters or are
// taken from the pool's queue by a worker. It owns each unit's transaction and how a run
// stops; what a flow says is package flows'.
package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// RunOptions configure one run. Zero values mean defaults.
type RunOptions struct {
	// Store is where the run is recorded and its output written: Runs, Units and
	// DeadLetters are required, Queue for a distributed run.
	Store Stores
	// HTTP is the rate-limit handler shared by all tasks; required for tasks that fetch.
	HTTP   tasks.HTTP
	Logger *slog.Logger
	// Area restricts spatial tasks to this lon/lat box (--bbox).
	Area *orb.Bound
	// OnlyTasks restricts the run to these task ids (--task, with --with-downstream
	// already applied); nil runs all.
	OnlyTasks []string
	// Resume continues the latest unfinished run of the flow (ResumeRun, when above 0,
	// names the run instead).
	Resume    bool
	ResumeRun int64
	// UseCurrentFlow makes a resumed run use the flow given (today's file, validated)
	// instead of the one the run recorded when it started.
	UseCurrentFlow bool
	// Trigger records why the run started: store.TriggerManual (default), schedule, replay.
	Trigger string
	// ScheduledFor is the fire time of a scheduled run, recorded with the run from its
	// start; nil for other runs.
	ScheduledFor *time.Time
	// Grace is how long in-flight units may take to commit or roll back once ctx is
	// cancelled. Defaults to 30s.
	Grace time.Duration
	// StoreWait is how long the run waits for its store to come back after a fault (a
	// restart, a lost connection, a full disk), probing it with a backoff that grows to
	// 30s, before it stops: interrupted, resumable, with Result.StoreDown set. Zero
	// means the flow's store_wait, else flows.DefaultStoreWait (10m).
	StoreWait time.Duration
	// Progress, when set, is updated as units finish (for a live display).
	Progress *Progress
	// AllowMassDelete lets mirror tasks delete more than their max_delete_fraction
	// (--allow-mass-delete).
	AllowMassDelete bool
	// Started, when set, is called once with the run's id as soon as the run is
	// recorded, before any task starts (the web UI answers with it while the run goes).
	Started func(runID int64)
	// MemoryLimit is the run's budget in bytes for responses, spools and decoded
	// features in flight (geoflow run --memory-limit); zero takes the flow's
	// memory_limit, then tasks.DefaultMemoryLimit. Memory, when set, is a budget shared
	// with other runs of the process, and wins over both.
	MemoryLimit int64
	Memory      *tasks.Memory
	// Distributed hands the run's units to the pool of geoflow worker processes
	// (the store must be a store.Queue); the run is recorded, planned, followed and
	// finished here. The flow's own distributed: setting does the same. A resumed run
	// keeps the mode it started with.
	Distributed bool
	// Process names this process in what the run records of the units it executes and
	// of its tasks' own requests (a pool's workers record their ids). Defaults to
	// hostname-pid.
	Process string

	// AdoptedBy, with ResumeRun, adopts that run (store.RunStart.AdoptedBy): a
	// distributed run whose starting process is gone, taken over by this name
	// ("worker w2"); see Adopter.
	AdoptedBy string
}

// Result is the outcome of a run.
type Result struct {
	RunID       int64
	Status      store.State // done, incomplete, failed or interrupted
	Resumed     bool
	Summary     store.RunSummary
	TaskStates  map[string]store.State
	FailedTasks map[string]string // task id -> error, for tasks that failed outright
	// DeadByClass counts the run's open dead letters by class; nil when there are none.
	DeadByClass map[dlq.Class]int64
	// FlowChanges, for a resumed run whose flow file changed since the run started,
	// lists the differences (recorded -> file); FlowUsed says which one ran.
	FlowChanges []string
	FlowUsed    string // "recorded" or "current"; "" when the file had not changed
	Elapsed     time.Duration
	// StoreDown is set (wrapping ErrStoreDown and the store's last fault) when the run
	// stopped because its store stayed unavailable past the store wait; Status is then
	// store.Interrupted.
	StoreDown error
	// Memory is what the run's memory budget saw: its peak, the waits for it.
	Memory tasks.MemoryStats
	// Process names this process in the run's records (RunOptions.Process), and so
	// among the processes the Summary's hosts are split by.
	Process string
}

// DeadLetters returns the number of units that failed for good.
func (r *Result) DeadLetters() int64 { return r.Summary.UnitsDead }

// Run executes flow f: tasks in dependency order, independent ones concurrently, each
// task's units through a bounded worker pool. Cancelling ctx stops planning new units;
// in-flight units get opts.Grace to commit or roll back, then the run is recorded as
// interrupted. A ctx cancelled with ErrHandedBack as its cause drops the run instead: it
// records nothing more and lets go of the run, whose queued units stay queued, for
// another process to adopt or resume; a distributed run whose hold another process took
// over (store.Run.Held) drops itself so. Run then returns an error wrapping
// ErrHandedBack. Otherwise the error is non-nil only when the run could not be carried
// out at all (no database, a bad option); task and unit failures are in the Result.
func Run(ctx context.Context, f *flows.Flow, opts RunOptions) (*Result, error) {
	if err := opts.Store.check(); err != nil {
		return nil, err
	}
	log := cmp.Or(opts.Logger, slog.Default())
	if _, err := selectTasks(f, opts.OnlyTasks); err != nil {
		return nil, err
	}
	distributed := opts.Distributed || f.Distributed
	if distributed && opts.Store.Queue == nil {
		return nil, store.ErrNoQueue
	}
	if err := preflight(ctx, f, opts, log); err != nil {
		return nil, err
	}
	if _, err := opts.Store.Runs.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrating the database: %w", err)
	}
	run, err := opts.Store.Runs.StartRun(ctx, store.RunStart{
		Flow: f.Name, FlowFile: absPath(f.File), FlowText: string(f.Source), FlowHash: f.Hash(),
		Trigger: opts.Trigger, ScheduledFor: opts.ScheduledFor, Area: opts.Area, OnlyTasks: opts.OnlyTasks, Resume: opts.Resume || opts.ResumeRun > 0, RunID: opts.ResumeRun,
		Distributed: distributed, AdoptedBy: opts.AdoptedBy,
	})
	if err != nil {
		return nil, err
	}
	defer run.Close()
	if opts.Started != nil {
		opts.Started(run.ID)
	}
	res := &Result{RunID: run.ID, Resumed: run.Resumed, Process: processName(opts.Process)}
	if run.Resumed {
		if f, err = resumeAs(f, run, &opts, log, res); err != nil {
			return nil, err
		}
	}
	selected, err := selectTasks(f, opts.OnlyTasks)
	if err != nil {
		return nil, fmt.Errorf("resuming run %d: %w", run.ID, err)
	}
	start := time.Now()
	log.Info("run started", "flow", f.Name, "run", run.ID, "resumed", run.Resumed, "tasks", len(selected), "distributed", run.Distributed)
	if run.Resumed && run.Distributed != distributed {
		log.Warn("resuming the run as it started: its units run on "+map[bool]string{true: "the pool's workers", false: "this process"}[run.Distributed], "run", run.ID)
	}
	if opts.StoreWait <= 0 {
		opts.StoreWait = cmp.Or(f.StoreWait, flows.DefaultStoreWait)
	}
	r := newRunner(f, opts, log, run.ID)
	// A store that stays down past the store wait stops the run as a signal does: no
	// new units, the units in flight end, and the run is recorded as interrupted.
	r.stop = newStopping(ctx, cmp.Or(opts.Grace, 30*time.Second), log)
	defer r.stop.Close()
	r.outage.stop = r.stop
	if run.Distributed {
		r.queue, r.held = opts.Store.Queue, run.Held
	}
	r.resumed = run.Resumed
	r.replan = res.FlowUsed == "current"
	r.runTasks(r.stop.Context(), selected)
	if r.stop.handedBack() {
		log.Info("run handed back: another process takes it over", "flow", f.Name, "run", run.ID)
		return nil, fmt.Errorf("run %d: %w", run.ID, context.Cause(r.stop.Context()))
	}
	if err := r.end(context.WithoutCancel(ctx), res); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	log.Info("run finished", "flow", f.Name, "run", run.ID, "status", res.Status,
		"units_done", res.Summary.UnitsDone, "units_total", res.Summary.UnitsTotal, "dead", res.Summary.UnitsDead,
		"inserted", res.Summary.Inserted, "skipped", res.Summary.Skipped, "updated", res.Summary.Updated, "rows_affected", res.Summary.RowsAffected,
		"elapsed", res.Elapsed.Round(time.Millisecond))
	return res, nil
}

// resumeAs sets a resumed run's options as the run started: it goes on over the area
// and tasks it started with (planning a different area would add units the run never
// had, and check completeness over the wrong box; other tasks would run inside a run that
// never chose them), with the flow it recorded unless opts say otherwise (flowToResume).
func resumeAs(f *flows.Flow, run *store.Run, opts *RunOptions, log *slog.Logger, res *Result) (*flows.Flow, error) {
	if !sameArea(opts.Area, run.Area) || (opts.OnlyTasks != nil && !slices.Equal(opts.OnlyTasks, run.OnlyTasks)) {
		log.Warn("resuming a run with the --bbox and --task it started with, not those given now",
			"run", run.ID, "bbox", fmtArea(run.Area), "tasks", run.OnlyTasks)
	}
	opts.Area, opts.OnlyTasks = run.Area, run.OnlyTasks
	return flowToResume(f, run, opts.UseCurrentFlow, log, res)
}

// runTasks runs the selected tasks, each once its dependencies have ended, at most the
// flow's max_parallel_tasks at once, and returns when all have ended.
func (r *runner) runTasks(ctx context.Context, selected map[string]bool) {
	sem := make(chan struct{}, cmp.Or(max(r.f.MaxParallelTasks, 0), 4))
	var wg sync.WaitGroup
	for _, t := range r.f.Tasks {
		if !selected[t.ID] {
			close(r.done[t.ID])
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(r.done[t.ID])
			r.runTask(ctx, t, sem)
		}()
	}
	wg.Wait()
}

// end records the run's end once its tasks have: dead letters of units a resume has
// done are closed, the run's state decided (runEnd) and recorded, and res filled in.
func (r *runner) end(ctx context.Context, res *Result) error {
	// Failed units that a resume has now done are no longer dead letters.
	if err := r.persist(ctx, "closing the dead letters of units now done", func(ctx context.Context) error {
		_, err := r.opts.Store.DeadLetters.CloseDeadLetters(ctx, r.runID)
		return err
	}); err != nil {
		r.log.Error("closing the dead letters of units now done", "err", err)
	}
	if n := r.unrecorded.Load(); n > 0 {
		r.log.Error("some units' outcomes could not be recorded; `geoflow run --resume` runs them again", "units", n)
	}
	status, errMsg, fails := runEnd{states: r.state, area: r.opts.Area, outside: r.outside,
		unrecorded: r.unrecorded.Load(), stopped: r.stop.Context().Err() != nil}.decide()
	maps.Copy(r.fails, fails)
	res.StoreDown = r.storeGone()
	if res.StoreDown != nil {
		errMsg = res.StoreDown.Error()
	}
	var sum store.RunSummary
	if err := r.persist(ctx, "recording the run's end", func(ctx context.Context) error {
		var err error
		sum, err = r.opts.Store.Runs.FinishRun(ctx, r.runID, status, errMsg)
		return err
	}); err != nil {
		if res.StoreDown != nil {
			// Nothing can be recorded in a store that is down: the run lists as crashed
			// (running, held by no process) until a resume takes it over.
			return fmt.Errorf("run %d stopped: %w; its end could not be recorded either (it lists as crashed until resumed): %w",
				r.runID, res.StoreDown, err)
		}
		return fmt.Errorf("run %d: %w (the run stays resumable: geoflow run --resume)", r.runID, err)
	}
	res.Status, res.Summary, res.TaskStates, res.FailedTasks = status, sum, r.state, r.fails
	if sum.UnitsDead > 0 {
		var err error
		if res.DeadByClass, err = r.opts.Store.DeadLetters.DeadLetterCounts(ctx, r.runID); err != nil {
			r.log.Error("counting dead letters", "err", err)
		}
	}
	ms := r.memory.Stats()
	r.log.Info("memory budget", "run", r.runID, "memory_limit_mib", ms.Limit>>20, "peak_mib", ms.Peak>>20,
		"waits", ms.Waits, "waited", ms.Waited.Round(time.Millisecond), "spooled_to_disk_early", ms.Spilled)
	res.Memory = ms
	return nil
}

// runEnd is what decides how a run whose tasks have all ended ends.
type runEnd struct {
	states  map[string]store.State // each task's final state
	area    *orb.Bound             // the run's --bbox; nil when it had none
	outside map[string]orb.Bound   // the tasks whose area the --bbox did not touch, and their area
	// unrecorded counts units whose outcome the store could not take.
	unrecorded int64
	stopped    bool // the run was stopped (a signal, its store gone)
}

// decide returns the run's state, why when it failed as a whole, and the failures to
// report per task besides their own. A run is interrupted when it was stopped; failed
// when a unit's outcome could not be recorded, or when the --bbox touched none of its
// tasks' areas (every task that ran found it outside: nothing was done, and the likeliest
// cause is a box with longitude and latitude swapped); else as its tasks ended (runState).
func (e runEnd) decide() (status store.State, errMsg string, fails map[string]string) {
	status = runState(e.states)
	if e.area != nil && len(e.outside) > 0 && !e.stopped && allOutside(e.states, e.outside) {
		status = store.Failed
		fails = map[string]string{}
		for id, a := range e.outside {
			fails[id] = fmt.Sprintf("--bbox %s does not touch its area %s (longitude and latitude swapped?)", fmtArea(e.area), fmtArea(&a))
		}
		errMsg = "--bbox " + fmtArea(e.area) + " touches no task's area"
	}
	if e.unrecorded > 0 {
		status = store.Failed
	}
	if e.stopped {
		status = store.Interrupted
	}
	return status, errMsg, fails
}

// allOutside tells whether every task that ended done found the run's area outside its own.
func allOutside(states map[string]store.State, outside map[string]orb.Bound) bool {
	for id, st := range states {
		if _, out := outside[id]; st == store.Done && !out {
			return false
		}
	}
	return true
}

// runState is the state of a run whose tasks ended in states: failed when a task failed
// or did not run because an upstream task failed, else incomplete when a task is, else
// done. (An interrupted run, and a run whose units could not all be recorded, are decided
// by the caller.)
func runState(states map[string]store.State) store.State {
	status := store.Done
	for _, st := range states {
		switch {
		case st == store.Failed || st == store.UpstreamFailed:
			return store.Failed
		case st == store.Incomplete:
			status = store.Incomplete
		}
	}
	return status
}

func sameArea(a, b *orb.Bound) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func fmtArea(b *orb.Bound) string {
	if b == nil {
		return "none"
	}
	return fmt.Sprintf("%g,%g,%g,%g", b.Min[0], b.Min[1], b.Max[0], b.Max[1])
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// selectTasks returns the set of task ids to run.
func selectTasks(f *flows.Flow, only []string) (map[string]bool, error) {
	sel := map[string]bool{}
	if len(only) == 0 {
		for _, t := range f.Tasks {
			sel[t.ID] = true
		}
		return sel, nil
	}
	for _, id := range only {
		if f.Task(id) == nil {
			return nil, fmt.Errorf("flow %q has no task %q", f.Name, id)
		}
		sel[id] = true
	}
	return sel, nil
}
