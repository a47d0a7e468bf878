package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/paulmach/orb"
)

// runner executes one run's tasks.
type runner struct {
	f     *flows.Flow
	opts  RunOptions
	log   *slog.Logger
	runID int64
	// secrets are the flow's (flows.Flow.Secrets), masked in logs, task errors and dead letters.
	secrets *redact.Set
	// resumed: tasks done in an earlier session of the run are not run again.
	resumed bool
	// replan: a resumed run executes an edited flow (--use-current-flow), so its tasks'
	// plans are recorded again and add the units the edit added.
	replan bool
	// replaying marks a runner executing dead letters again: a failure adds to the
	// entry's replay history.
	replaying bool
	// unsent holds, while replaying, why the units that failed without being sent were
	// not sent (unit key -> *retry.Unsent): the replay reports them apart.
	unsent sync.Map

	done map[string]chan struct{} // closed when a task has ended; read-only after setup
	mu   sync.Mutex
	// state and fails are read by Run once every task has ended.
	state map[string]store.State
	fails map[string]string
	// outside holds the tasks whose area the run's --bbox did not touch, and their area.
	outside map[string]orb.Bound
	// unrecorded counts units whose outcome the store could not take, even after waiting:
	// they are left for a resume.
	unrecorded atomic.Int64
	// storeDown is set while the store is known to be unreachable (outage.down), read
	// without a lock by every unit that commits.
	storeDown atomic.Bool
	// outage is the store's outage, shared by every unit and bookkeeping write.
	outage outage
	// stop is how the run or replay ends early (a signal, the store gone past its wait);
	// nil for a pool worker's runners, whose units the pool stops one by one.
	stop *stopping
	// memory is the run's budget for responses, spools and decoded features in flight.
	memory *tasks.Memory
	// queue is set for a distributed run: its units are the pool's jobs, which the
	// runner follows instead of executing them.
	queue store.Queue
	// held tells whether this process still holds the run (store.Run.Held); nil: it
	// does for as long as it goes.
	held func(ctx context.Context) (bool, error)
}

func newRunner(f *flows.Flow, opts RunOptions, log *slog.Logger, runID int64) *runner {
	secrets := &redact.Set{}
	secrets.Add(f.Secrets...)
	if len(f.Secrets) > 0 {
		log = slog.New(secrets.Handler(log.Handler()))
	}
	opts.Process = processName(opts.Process)
	r := &runner{f: f, opts: opts, log: log, runID: runID, secrets: secrets,
		done: make(map[string]chan struct{}), state: make(map[string]store.State), fails: make(map[string]string),
		outside: make(map[string]orb.Bound),
		memory:  cmp.Or(opts.Memory, tasks.NewMemory(cmp.Or(opts.MemoryLimit, f.MemoryLimit)))}
	for _, t := range f.Tasks {
		r.done[t.ID] = make(chan struct{})
	}
	return r
}

func (r *runner) setState(id string, st store.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state[id] = st
}

func (r *runner) getState(id string) (store.State, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.state[id]
	return st, ok
}

// runTask waits for dependencies, then plans and executes the task's units.
func (r *runner) runTask(ctx context.Context, t *flows.Task, sem chan struct{}) {
	final := context.WithoutCancel(ctx)
	record := func(state store.State, msg string) {
		msg = r.secrets.String(msg)
		r.setState(t.ID, state)
		if r.stop.handedBack() {
			return // the run is another process's to record now
		}
		if err := r.persist(final, "recording task state", func(ctx context.Context) error {
			return r.opts.Store.Runs.SetTaskState(ctx, r.runID, t.ID, t.Type, state, msg)
		}); err != nil {
			r.log.Error("recording task state", "task", t.ID, "state", state, "err", err)
		}
	}
	for _, dep := range t.DependsOn {
		<-r.done[dep]
		st, ran := r.getState(dep)
		if !ran {
			continue // not selected in this run (--task): its output is taken as it stands
		}
		if st == store.Incomplete {
			// What the upstream task stored is there, short as it is: this task works
			// on it, as it would on any partial upstream data, and the run shows the
			// upstream task incomplete.
			r.log.Warn("an upstream task is incomplete; this task runs on what it stored", "task", t.ID, "upstream", dep)
			continue
		}
		if st != store.Done {
			if st == store.Interrupted || ctx.Err() != nil {
				record(store.Interrupted, "")
				return
			}
			r.log.Warn("task skipped: an upstream task did not succeed", "task", t.ID, "upstream", dep, "upstream_state", st)
			record(store.UpstreamFailed, fmt.Sprintf("upstream task %q %s", dep, st))
			return
		}
	}
	if r.resumed {
		if st, err := r.opts.Store.Runs.TaskState(final, r.runID, t.ID); err == nil && st == store.Done {
			r.log.Info("task already done in this run", "task", t.ID)
			r.setState(t.ID, store.Done)
			return
		}
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		record(store.Interrupted, "")
		return
	}
	defer func() { <-sem }()
	if ctx.Err() != nil {
		record(store.Interrupted, "")
		return
	}
	record(store.Running, "")
	state, msg, dead := r.execute(ctx, t)
	if state == store.Failed && dead == 0 {
		r.mu.Lock()
		r.fails[t.ID] = r.secrets.String(msg)
		r.mu.Unlock()
	}
	record(state, msg)
}

// env is what the task's units get from the runner.
func (r *runner) env(t *flows.Task) *tasks.Env {
	return &tasks.Env{
		Flow: r.f.Name, RunID: r.runID, TaskID: t.ID, Logger: r.log.With("task", t.ID),
		HTTP: r.opts.HTTP, Stores: r.opts.Store.Tasks, Area: r.opts.Area,
		Retry: t.Retry, RateLimit: t.RateLimit, Redirects: t.Redirects, AllowMassDelete: r.opts.AllowMassDelete,
		Memory: r.memory, Stopping: r.stop.Stopping(),
	}
}

// execute plans and runs one task's units; it returns the task's final state, a message
// when it did not succeed, and how many of its units failed for good.
func (r *runner) execute(ctx context.Context, t *flows.Task) (state store.State, msg string, dead int64) {
	task, err := t.Config.New(t.ID)
	if err != nil {
		r.log.Error("task cannot start", "task", t.ID, "err", err)
		return store.Failed, err.Error(), 0
	}
	env := r.env(t)
	// The task's own requests (planning, its finish's checks) count with the run's.
	counted, _ := retry.CountRequests(ctx)
	defer r.recordTaskRequests(context.WithoutCancel(counted), env)
	var planned []store.Unit
	err = r.persist(counted, "planning", func(ctx context.Context) error {
		planned, err = task.Plan(ctx, env)
		return err
	})
	var outside *tasks.OutsideArea
	switch {
	case errors.As(err, &outside):
		env.Logger.Info("the run's --bbox does not touch this task's area: nothing to do", "task_area", fmtArea(&outside.Area))
		r.mu.Lock()
		r.outside[t.ID] = outside.Area
		r.mu.Unlock()
		return store.Done, "", 0
	case err != nil && ctx.Err() != nil:
		return store.Interrupted, "", 0
	case err != nil:
		env.Logger.Error("planning failed", "err", err)
		msg := fmt.Sprintf("planning: %v", err)
		if tasks.IsExtentError(err) {
			msg += "; " + inspectHint(t.Config)
		}
		return store.Failed, msg, 0
	}
	final := context.WithoutCancel(ctx)
	open, err := r.recordPlan(final, t.ID, planned)
	if err != nil {
		return store.Failed, err.Error(), 0
	}
	prog := r.opts.Progress.task(t.ID)
	env.Logger.Info("task started", "units", len(open), "planned", len(planned))
	ran := r.runUnits(ctx, t, task, env, open, prog)
	switch {
	case ctx.Err() != nil || ran.cut:
		return store.Interrupted, "", ran.dead
	case ran.halted != nil:
		// Its harvest is cut short by geoflow's own limit: no finish can prove it
		// complete, and a mirror must not delete on it. The task failed outright
		// (exit 1), whatever dead letters it left.
		return store.Failed, ran.halted.Error(), 0
	}
	env.UnitsLeft = ran.dead + ran.unrecorded
	end := taskEnd{finish: r.finish(context.WithoutCancel(counted), task, env), unrecorded: ran.unrecorded, dead: ran.dead}
	if ran.dead > 0 {
		end.deadByClass = r.deadByClass(final, env)
	}
	state, msg = end.state()
	return state, msg, ran.dead
}

// recordTaskRequests records what the task's requests outside its units, counted in ctx,
// asked of each host; nothing when it sent none.
func (r *runner) recordTaskRequests(ctx context.Context, env *tasks.Env) {
	x := r.execution(ctx)
	if len(x.Hosts) == 0 {
		return
	}
	if err := r.persist(ctx, "recording the task's requests", func(ctx context.Context) error {
		return r.opts.Store.Runs.AddTaskExecution(ctx, r.runID, env.TaskID, x)
	}); err != nil {
		env.Logger.Error("recording the task's requests", "err", err)
	}
}

// processName is name, or this process's hostname-pid when name is "".
func processName(name string) string {
	if name != "" {
		return name
	}
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(os.Getpid())
}

// recordPlan records the task's planned units and returns those to run: the units not
// done, in key order.
func (r *runner) recordPlan(ctx context.Context, task string, planned []store.Unit) (open []store.Unit, err error) {
	units := r.opts.Store.Units
	err = r.persist(ctx, "recording the planned units", func(ctx context.Context) error {
		if r.resumed && !r.replan {
			// The units the run recorded stand: its plan made again may cut the work
			// otherwise (blocks of tiles by another geoflow version, an extent read
			// again), and its units would fetch what those fetch a second time. A
			// resume with the edited flow (--use-current-flow) plans again, and adds
			// what the edit added.
			if open, err = units.OpenUnits(ctx, r.runID, task); err != nil || len(open) > 0 {
				if err == nil && r.queue != nil {
					// A distributed run's store enqueues the task's open units with
					// any it records: none here.
					err = units.AddUnits(ctx, r.runID, task, nil)
				}
				return err
			}
		}
		if err := units.AddUnits(ctx, r.runID, task, planned); err != nil {
			return err
		}
		open, err = units.OpenUnits(ctx, r.runID, task)
		return err
	})
	return open, err
}

// ranUnits is how a task's units ended.
type ranUnits struct {
	dead, unrecorded int64 // units that failed for good; units whose outcome the store could not take
	cut              bool  // some unit was cut short by a stop
	halted           error // the budget the task crossed, which stopped it
}

// runUnits runs the task's open units here, or follows them on the pool's workers (a
// distributed run); either way the task ends alike.
func (r *runner) runUnits(ctx context.Context, t *flows.Task, task tasks.Task, env *tasks.Env, open []store.Unit, prog *TaskProgress) ranUnits {
	if r.queue != nil {
		dead, cut := r.follow(ctx, r.queue, env, prog)
		return ranUnits{dead: dead, cut: cut}
	}
	prog.addTotal(int64(len(open)))
	var dead, interrupted, unrecorded atomic.Int64
	halted := r.drain(ctx, task, env, open, workers(t), prog, func(_ store.Unit, state store.State) {
		switch state {
		case store.Failed:
			dead.Add(1)
		case store.Interrupted:
			interrupted.Add(1)
		case store.Pending:
			unrecorded.Add(1)
		}
	})
	return ranUnits{dead: dead.Load(), unrecorded: unrecorded.Load(), cut: interrupted.Load() > 0, halted: halted}
}

// taskEnd is what decides how a task whose units have all ended ends: its Finisher's
// verdict, the units whose outcome could not be recorded, and its dead letters.
type taskEnd struct {
	// finish is the error of the task's finish that decides its state: a
	// *store.MassDeleteError, a *tasks.IncompleteError, or nil (runner.finish).
	finish error
	// unrecorded counts units whose outcome the store could not take.
	unrecorded int64
	// dead counts the task's units that failed for good; deadByClass counts its open
	// dead letters by class (nil when it could not be read).
	dead        int64
	deadByClass map[dlq.Class]int64
}

// state is the task's final state and, unless done, why. A failure wins over
// incompleteness: units left unrecorded, a mass deletion that needs a person, or dead
// letters of any class other than incomplete fail the task. A task is incomplete when its
// finish found the evidence short, or when all its dead letters are of class incomplete
// (what came is stored; a replay asks again).
func (e taskEnd) state() (store.State, string) {
	var inc *tasks.IncompleteError
	isIncomplete := errors.As(e.finish, &inc)
	var open int64
	for _, n := range e.deadByClass {
		open += n
	}
	onlyIncomplete := open > 0 && e.deadByClass[dlq.ClassIncomplete] == open
	switch {
	case e.unrecorded > 0:
		return store.Failed, fmt.Sprintf("%d units could not be recorded (the store was unavailable); resume the run", e.unrecorded)
	case e.finish != nil && !isIncomplete:
		return store.Failed, e.finish.Error()
	case e.dead > 0 && !onlyIncomplete:
		return store.Failed, fmt.Sprintf("%d units failed", e.dead)
	case isIncomplete && e.dead > 0:
		return store.Incomplete, fmt.Sprintf("%v; %d units incomplete (dead letters of class incomplete)", e.finish, e.dead)
	case isIncomplete:
		return store.Incomplete, e.finish.Error()
	case e.dead > 0:
		return store.Incomplete, fmt.Sprintf("%d units incomplete (dead letters of class incomplete)", e.dead)
	}
	return store.Done, ""
}

// deadByClass counts the task's open dead letters by class; nil when the store cannot
// say (the task then counts as failed by them). Entries of units a resume has since done
// are closed first, so that only the units still failed count.
func (r *runner) deadByClass(ctx context.Context, env *tasks.Env) map[dlq.Class]int64 {
	var rows []dlq.StatsRow
	err := r.persist(ctx, "counting the task's dead letters", func(ctx context.Context) error {
		if _, err := r.opts.Store.DeadLetters.CloseDeadLetters(ctx, env.RunID); err != nil {
			return err
		}
		var err error
		rows, err = r.opts.Store.DeadLetters.DeadLetterStats(ctx, dlq.Filter{RunID: env.RunID, Task: env.TaskID, Status: dlq.StatusOpen})
		return err
	})
	if err != nil {
		env.Logger.Error("counting the task's dead letters", "err", err)
		return nil
	}
	out := map[dlq.Class]int64{}
	for _, row := range rows {
		out[row.Class] += row.N
	}
	return out
}

// workers is how many of t's units run at once: one for each request the task may have in
// flight (the rate-limit handler holds a host to rate_limit.concurrency whatever the
// workers; without it, to as many as a slow server's quota needs, up to
// retry.MaxAdaptiveConcurrency), and a quarter more, so that while some units write their
// output into the store the host still has every request slot busy. Workers waiting for a
// slot hold nothing.
// inspectHint tells where to see the extents a task's server advertises.
func inspectHint(c tasks.Config) string {
	if s, ok := c.(tasks.Source); ok && s.SourceURL() != "" {
		return "geoflow inspect " + redact.URL(s.SourceURL()) + " lists each layer's extent"
	}
	return "geoflow inspect URL lists each layer's extent"
}

func workers(t *flows.Task) int {
	c := cmp.Or(t.RateLimit.Concurrency, retry.MaxAdaptiveConcurrency)
	return c + (c+3)/4
}

// finish lets a task finish its work (index its table, check completeness, apply a
// mirror's deletions). A problem is reported loudly but does not undo work that is
// stored; the error it returns decides the task's state: a mirror's deletion stopped by
// the safety rail (*store.MassDeleteError), which fails the task for a person's decision,
// or evidence that the harvest is short (*tasks.IncompleteError), which ends it incomplete.
func (r *runner) finish(ctx context.Context, task tasks.Task, env *tasks.Env) error {
	fin, ok := task.(tasks.Finisher)
	if !ok {
		return nil
	}
	err := r.persist(ctx, "finishing the task", func(ctx context.Context) error { return fin.Finish(ctx, env) })
	var mass *store.MassDeleteError
	var inc *tasks.IncompleteError
	switch {
	case errors.As(err, &mass):
		return err
	case errors.As(err, &inc):
		env.Logger.Error("task incomplete: the harvest cannot be proved complete", "where", inc.Where, "missing", inc.Missing, "err", r.secrets.String(err.Error()))
		return err
	case err != nil:
		env.Logger.Error("task finished with a problem", "err", err)
	}
	return nil
}
