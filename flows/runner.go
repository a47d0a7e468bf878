package flows

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks"
)

// States of runs, tasks and units as recorded in the database.
const (
	StatePending        = "pending"
	StateRunning        = "running"
	StateDone           = "done"
	StateFailed         = "failed"
	StateUpstreamFailed = "upstream_failed"
	StateInterrupted    = "interrupted"
)

// RunOptions configure one run. Zero values mean defaults.
type RunOptions struct {
	// Store is the database; required.
	Store *postgis.Store
	// HTTP is the rate-limit handler shared by all tasks; required for tasks that fetch.
	HTTP   tasks.HTTP
	Logger *slog.Logger
	// Area restricts spatial tasks to this lon/lat box (--bbox).
	Area *orb.Bound
	// OnlyTasks restricts the run to these task ids (--task, with --with-downstream
	// already applied); nil runs all.
	OnlyTasks []string
	// Resume continues the latest unfinished run of the flow.
	Resume bool
	// Trigger records why the run started: manual (default), schedule, replay.
	Trigger string
	// ScheduledFor is the fire time of a scheduled run, recorded with the run from its
	// start; nil for other runs.
	ScheduledFor *time.Time
	// Grace is how long in-flight units may take to commit or roll back once ctx is
	// cancelled. Defaults to 30s.
	Grace time.Duration
	// Progress, when set, is updated as units finish (for a live display).
	Progress *Progress
}

// Result is the outcome of a run.
type Result struct {
	RunID       int64
	Status      string // done, failed or interrupted
	Resumed     bool
	Summary     postgis.RunSummary
	TaskStates  map[string]string
	FailedTasks map[string]string // task id -> error, for tasks that failed outright
	// DeadByClass counts the run's open dead letters by class; nil when there are none.
	DeadByClass map[dlq.Class]int64
	Elapsed     time.Duration
}

// DeadLetters returns the number of units that failed for good.
func (r *Result) DeadLetters() int64 { return r.Summary.UnitsDead }

// Run executes flow f: tasks in dependency order, independent ones concurrently, each
// task's units through a bounded worker pool. Cancelling ctx stops planning new units;
// in-flight units get opts.Grace to commit or roll back, then the run is recorded as
// interrupted. The error is non-nil only when the run could not be carried out at all
// (no database, a bad option); task and unit failures are in the Result.
func Run(ctx context.Context, f *Flow, opts RunOptions) (*Result, error) {
	if opts.Store == nil {
		return nil, errors.New("flows: no store")
	}
	log := cmp.Or(opts.Logger, slog.Default())
	grace := cmp.Or(opts.Grace, 30*time.Second)
	selected, err := selectTasks(f, opts.OnlyTasks)
	if err != nil {
		return nil, err
	}
	if _, err := opts.Store.Migrate(ctx); err != nil {
		return nil, fmt.Errorf("migrating the database: %w", err)
	}
	run, err := opts.Store.StartRun(ctx, postgis.RunStart{
		Flow: f.Name, FlowFile: absPath(f.File), Trigger: opts.Trigger, ScheduledFor: opts.ScheduledFor, Area: opts.Area, OnlyTasks: opts.OnlyTasks, Resume: opts.Resume,
	})
	if err != nil {
		return nil, err
	}
	defer run.Close()
	if run.Resumed {
		// A resumed run goes on over the area and tasks it started with: planning a
		// different area would add units the run never had (and check completeness over
		// the wrong box); other tasks would run inside a run that never chose them.
		if !sameArea(opts.Area, run.Area) || (opts.OnlyTasks != nil && !slices.Equal(opts.OnlyTasks, run.OnlyTasks)) {
			log.Warn("resuming a run with the --bbox and --task it started with, not those given now",
				"run", run.ID, "bbox", fmtArea(run.Area), "tasks", run.OnlyTasks)
		}
		opts.Area, opts.OnlyTasks = run.Area, run.OnlyTasks
		if selected, err = selectTasks(f, opts.OnlyTasks); err != nil {
			return nil, fmt.Errorf("resuming run %d: %w", run.ID, err)
		}
	}
	start := time.Now()
	log.Info("run started", "flow", f.Name, "run", run.ID, "resumed", run.Resumed, "tasks", len(selected))

	r := &runner{
		f: f, opts: opts, log: log, grace: grace, run: run,
		done:  make(map[string]chan struct{}),
		state: make(map[string]string),
		fails: make(map[string]string),
	}
	for _, t := range f.Tasks {
		r.done[t.ID] = make(chan struct{})
	}
	// Hard-stop context for in-flight work: cancelled grace after ctx, never before.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopTimer := context.AfterFunc(ctx, func() {
		log.Warn("stopping: no new units; in-flight units may finish", "grace", grace)
		time.AfterFunc(grace, cancelWork)
	})
	defer stopTimer()

	parallel := f.MaxParallelTasks
	if parallel <= 0 {
		parallel = 4
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, t := range f.Tasks {
		if !selected[t.ID] {
			close(r.done[t.ID])
			r.setState(t.ID, "")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(r.done[t.ID])
			r.runTask(ctx, work, t, sem)
		}()
	}
	wg.Wait()

	final := context.WithoutCancel(ctx)
	// Failed units that a resume has now done are no longer dead letters.
	if _, err := opts.Store.CloseDeadLetters(final, run.ID); err != nil {
		log.Error("closing the dead letters of units now done", "err", err)
	}
	status := StateDone
	for _, st := range r.state {
		if st == StateFailed || st == StateUpstreamFailed {
			status = StateFailed
		}
	}
	if ctx.Err() != nil {
		status = StateInterrupted
	}
	sum, err := opts.Store.FinishRun(final, run.ID, status, "")
	if err != nil {
		return nil, err
	}
	res := &Result{RunID: run.ID, Status: status, Resumed: run.Resumed, Summary: sum,
		TaskStates: r.state, FailedTasks: r.fails, Elapsed: time.Since(start)}
	if sum.UnitsDead > 0 {
		if res.DeadByClass, err = opts.Store.DeadLetterCounts(final, run.ID); err != nil {
			log.Error("counting dead letters", "err", err)
		}
	}
	log.Info("run finished", "flow", f.Name, "run", run.ID, "status", status,
		"units_done", sum.UnitsDone, "units_total", sum.UnitsTotal, "dead", sum.UnitsDead,
		"inserted", sum.Inserted, "skipped", sum.Skipped, "updated", sum.Updated, "elapsed", res.Elapsed.Round(time.Millisecond))
	return res, nil
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
func selectTasks(f *Flow, only []string) (map[string]bool, error) {
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

// Downstream returns ids plus every task that depends on them, directly or not.
func Downstream(f *Flow, ids []string) []string {
	in := map[string]bool{}
	for _, id := range ids {
		in[id] = true
	}
	for changed := true; changed; {
		changed = false
		for _, t := range f.Tasks {
			if in[t.ID] {
				continue
			}
			for _, d := range t.DependsOn {
				if in[d] {
					in[t.ID], changed = true, true
					break
				}
			}
		}
	}
	var out []string
	for _, t := range f.Tasks {
		if in[t.ID] {
			out = append(out, t.ID)
		}
	}
	return out
}

type runner struct {
	f     *Flow
	opts  RunOptions
	log   *slog.Logger
	grace time.Duration
	run   *postgis.Run

	done map[string]chan struct{} // closed when a task has ended; read-only after setup
	// replaying marks a runner executing dead letters again: a failure adds to the
	// entry's replay history.
	replaying bool
	mu        sync.Mutex
	state     map[string]string
	fails     map[string]string
}

func (r *runner) setState(id, st string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st == "" {
		return
	}
	r.state[id] = st
}

func (r *runner) getState(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.state[id]
	return st, ok
}

// runTask waits for dependencies, then plans and executes the task's units.
func (r *runner) runTask(ctx, work context.Context, t *Task, sem chan struct{}) {
	store := r.opts.Store
	final := context.WithoutCancel(ctx)
	record := func(state, msg string) {
		r.setState(t.ID, state)
		if err := store.SetTaskState(final, r.run.ID, t.ID, t.Type, state, msg); err != nil {
			r.log.Error("recording task state", "task", t.ID, "err", err)
		}
	}
	for _, dep := range t.DependsOn {
		<-r.done[dep]
		st, ran := r.getState(dep)
		if !ran {
			// Not selected in this run (--task): its output is taken as it stands.
			continue
		}
		if st != StateDone {
			if st == StateInterrupted || ctx.Err() != nil {
				record(StateInterrupted, "")
				return
			}
			r.log.Warn("task skipped: an upstream task did not succeed", "task", t.ID, "upstream", dep, "upstream_state", st)
			record(StateUpstreamFailed, fmt.Sprintf("upstream task %q %s", dep, st))
			return
		}
	}
	if r.run.Resumed {
		if st, err := store.TaskState(final, r.run.ID, t.ID); err == nil && st == StateDone {
			r.log.Info("task already done in this run", "task", t.ID)
			r.setState(t.ID, StateDone)
			return
		}
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		record(StateInterrupted, "")
		return
	}
	defer func() { <-sem }()
	if ctx.Err() != nil {
		record(StateInterrupted, "")
		return
	}
	record(StateRunning, "")
	state, msg, dead := r.execute(ctx, work, t)
	if state == StateFailed && dead == 0 {
		r.mu.Lock()
		r.fails[t.ID] = msg
		r.mu.Unlock()
	}
	record(state, msg)
}

// execute plans and runs one task's units; it returns the task's final state, a message
// when it did not succeed, and how many of its units failed for good.
func (r *runner) execute(ctx, work context.Context, t *Task) (state, msg string, dead int64) {
	store := r.opts.Store
	log := r.log.With("task", t.ID)
	task, err := t.Config.New(t.ID)
	if err != nil {
		log.Error("task cannot start", "err", err)
		return StateFailed, err.Error(), 0
	}
	env := &tasks.Env{
		Flow: r.f.Name, RunID: r.run.ID, TaskID: t.ID, Logger: log,
		HTTP: r.opts.HTTP, Store: store, Area: r.opts.Area,
		Retry: t.Retry, RateLimit: t.RateLimit,
	}
	planned, err := task.Plan(ctx, env)
	if err != nil {
		if ctx.Err() != nil {
			return StateInterrupted, "", 0
		}
		log.Error("planning failed", "err", err)
		return StateFailed, fmt.Sprintf("planning: %v", err), 0
	}
	final := context.WithoutCancel(ctx)
	if err := store.AddUnits(final, r.run.ID, t.ID, planned); err != nil {
		return StateFailed, err.Error(), 0
	}
	open, err := store.OpenUnits(final, r.run.ID, t.ID)
	if err != nil {
		return StateFailed, err.Error(), 0
	}
	prog := r.opts.Progress.task(t.ID)
	prog.addTotal(int64(len(open)))
	log.Info("task started", "units", len(open), "planned", len(planned))

	var deadUnits, interrupted atomic.Int64
	r.drain(ctx, work, task, env, open, cmp.Or(t.RateLimit.Concurrency, 4), prog, func(_ tasks.Unit, state string) {
		switch state {
		case StateFailed:
			deadUnits.Add(1)
		case StateInterrupted:
			interrupted.Add(1)
		}
	})
	switch {
	case ctx.Err() != nil || interrupted.Load() > 0:
		return StateInterrupted, "", deadUnits.Load()
	}
	finish(final, task, env)
	if deadUnits.Load() > 0 {
		return StateFailed, fmt.Sprintf("%d units failed", deadUnits.Load()), deadUnits.Load()
	}
	return StateDone, "", 0
}

// finish lets a task finish its work (index its table, check completeness). A problem is
// reported loudly but does not undo work that is stored.
func finish(ctx context.Context, task tasks.Task, env *tasks.Env) {
	if fin, ok := task.(tasks.Finisher); ok {
		if err := fin.Finish(ctx, env); err != nil {
			env.Logger.Error("task finished with a problem", "err", err)
		}
	}
}

// unit runs one unit and records how it ended.
func (r *runner) unit(work context.Context, task tasks.Task, env *tasks.Env, u tasks.Unit, prog *TaskProgress) ([]tasks.Unit, string) {
	store := r.opts.Store
	ref := tasks.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: u.Key}
	// No commit of its own marks the unit running: its start time rides along in the
	// context and is recorded, with the attempt, by whatever records its outcome.
	work = tasks.WithUnitStart(work, time.Now())
	final := context.WithoutCancel(work)
	res, err := task.Execute(work, env, u)
	if err != nil {
		if work.Err() != nil && errors.Is(err, context.Canceled) {
			_ = store.EndUnit(final, ref, StateInterrupted, "interrupted by shutdown")
			return nil, StateInterrupted
		}
		prog.failed()
		r.deadLetter(final, env, u, err)
		return nil, StateFailed
	}
	prog.finished(res)
	return res.Children, StateDone
}

// deadLetter records a unit that failed for good: the unit's failed state and its
// dead-letter entry (classified, redacted) commit together. Only the redacted error is
// logged, so no credential reaches the logs either.
func (r *runner) deadLetter(ctx context.Context, env *tasks.Env, u tasks.Unit, err error) {
	store := r.opts.Store
	ref := tasks.UnitRef{RunID: env.RunID, TaskID: env.TaskID, Key: u.Key}
	if postgis.IsDatabase(err) {
		err = retry.Permanent(dlq.ClassDatabase, err)
	}
	e := dlq.FromError(err)
	e.Flow, e.Task, e.RunID, e.Unit, e.BBox = env.Flow, env.TaskID, env.RunID, u.Key, u.BBox
	if r.replaying {
		e.History = []dlq.ReplayItem{{At: time.Now().UTC(), Result: dlq.ReplayFailed, Class: e.Class, Error: e.Error}}
	}
	env.Logger.Error("unit failed", "unit", u.Key, "class", e.Class, "err", e.Error)
	if _, rerr := store.RecordDeadLetter(ctx, ref, e); rerr != nil {
		env.Logger.Error("recording the dead letter", "unit", u.Key, "err", rerr)
		// Without its entry, the unit is at least failed, so a resume runs it again.
		if rerr := store.EndUnit(ctx, ref, StateFailed, e.Error); rerr != nil {
			env.Logger.Error("recording failed unit", "unit", u.Key, "err", rerr)
		}
	}
}

// drain executes units, and the children they plan, with a pool of workers until none
// are left or ctx is cancelled (units in flight then run on under work). ended is called,
// from the workers, after each unit with the state it ended in.
func (r *runner) drain(ctx, work context.Context, task tasks.Task, env *tasks.Env, units []tasks.Unit, workers int,
	prog *TaskProgress, ended func(u tasks.Unit, state string)) {
	q := newQueue(units)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				u, ok := q.pop(ctx)
				if !ok {
					return
				}
				children, state := r.unit(work, task, env, u, prog)
				ended(u, state)
				prog.addTotal(int64(len(children)))
				q.finish(children)
			}
		}()
	}
	wg.Wait()
}

// queue hands units to workers; units may add children while others run. It ends when
// it is empty and nothing is in flight, or when ctx is cancelled.
type queue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    []tasks.Unit
	inflight int
}

func newQueue(items []tasks.Unit) *queue {
	q := &queue{items: items}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) pop(ctx context.Context) (tasks.Unit, bool) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && q.inflight > 0 && ctx.Err() == nil {
		q.cond.Wait()
	}
	if ctx.Err() != nil || len(q.items) == 0 {
		q.cond.Broadcast()
		return tasks.Unit{}, false
	}
	u := q.items[0]
	q.items = q.items[1:]
	q.inflight++
	return u, true
}

func (q *queue) finish(children []tasks.Unit) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight--
	q.items = append(q.items, children...)
	q.cond.Broadcast()
}
