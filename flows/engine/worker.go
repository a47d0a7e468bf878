package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// UnitWorker executes the units of distributed runs that the pool hands this process,
// exactly as a run's own workers do (the same execution, transaction, counts and dead
// letters): each run's recorded flow is parsed again, with this process's environment
// for its ${VAR}s, and each task built from it once per run. Execute is what the
// store's Queue.Work calls for each job; it is safe for concurrent use.
type UnitWorker struct {
	// Store is where the runs are recorded: Runs, Units and DeadLetters are
	// required; Queue is the pool's, which calls Execute.
	Store    Stores
	HTTP     tasks.HTTP
	Registry *tasks.Registry
	Logger   *slog.Logger
	// Secrets, when set, gets the secrets of the flows parsed (flows.Options.Secrets).
	Secrets *redact.Set
	// Backlog, when set, says how long a new request to the host of a URL would wait in
	// this process (retry.Handler.Backlog); a unit whose task's host would keep it
	// waiting longer than SnoozeAfter (default 2s) is snoozed for about that long
	// instead of holding a slot.
	Backlog     func(rawURL string) time.Duration
	SnoozeAfter time.Duration
	// Memory is the process's one budget for the responses, spools and decoded
	// features of every unit it executes, whatever their run; nil gives each run the
	// budget its flow sets (memory_limit, else the default).
	Memory *tasks.Memory
	// ID names the worker in what the runs record of the units it executes (its id in
	// the pool); defaults to hostname-pid.
	ID string

	mu   sync.Mutex
	runs map[int64]*workerRun

	done, failed, snoozed atomic.Int64
	inFlight              atomic.Int64
}

// workerRun is one run as this worker executes its units.
type workerRun struct {
	r       *runner
	flow    *flows.Flow
	used    time.Time
	status  store.State
	checked time.Time
	tasks   map[string]*workerTask
}

type workerTask struct {
	task tasks.Task
	env  *tasks.Env
	url  string
}

// runStatusFor is how long a run's status read from the store is taken as current.
const runStatusFor = 2 * time.Second

// Stats reports what the worker has done since it started.
func (w *UnitWorker) Stats() store.WorkerStats {
	return store.WorkerStats{Done: w.done.Load(), Failed: w.failed.Load(), Snoozed: w.snoozed.Load(), InFlight: int(w.inFlight.Load())}
}

// Execute runs one unit of a distributed run. It returns nil when the unit ended (done,
// or failed with its dead letter) or has nothing left to do (done already, its run no
// longer running); a *store.SnoozeError when the unit must wait (its host's backlog,
// its run interrupted and perhaps about to be resumed); ctx's error when the worker
// stopped it or its time ran out (the unit is left interrupted), or when the pool took
// it back (the store refused its writes: store.ErrUnitTaken, and nothing of it was
// recorded); any other error when the unit's outcome could not be recorded (the pool
// tries it again later).
func (w *UnitWorker) Execute(ctx context.Context, job store.UnitJob) error {
	log := cmp.Or(w.Logger, slog.Default())
	ref := job.Ref
	wr, status, err := w.run(ctx, ref.RunID)
	if err != nil {
		return w.mask(err)
	}
	switch {
	case status == store.Interrupted && time.Since(job.Enqueued) < time.Hour:
		// Its run was stopped and may be resumed soon: a job taken just before that
		// keeps its unit for the resume (which cannot enqueue it while it is live).
		w.snoozed.Add(1)
		return store.Snooze(10*time.Second, "its run is interrupted")
	case status != store.Running:
		log.Debug("unit skipped: its run is not running", "run", ref.RunID, "unit", ref.Key, "status", status)
		return nil
	}
	wt, err := w.task(wr, ref.TaskID)
	if err != nil {
		return w.mask(err)
	}
	u, state, err := w.Store.Units.Unit(ctx, ref)
	if err != nil {
		return err
	}
	if state == store.Done || state == store.Failed {
		return nil // ended already: a job taken again after its worker committed
	}
	if w.Backlog != nil && wt.url != "" {
		after := cmp.Or(w.SnoozeAfter, 2*time.Second)
		if d := w.Backlog(wt.url); d > after {
			w.snoozed.Add(1)
			// Back about when the host's queue here has drained to the threshold, spread
			// so that the snoozed units do not all return at one instant.
			wait := d - after/2
			wait += time.Duration(rand.Int64N(int64(wait/5) + 1))
			return store.Snooze(wait, fmt.Sprintf("its host's requests here wait %s", d.Round(time.Millisecond)))
		}
	}
	w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	// The pool ends ctx when the worker stops hard, the unit has run its time out, or
	// the unit was taken back (the cause, store.ErrUnitTaken, passes on); the unit is
	// cut short (interrupted, for the next attempt), not failed: a deadline would read
	// as the source's timeout.
	uctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()
	if jobEnd, ok := ctx.Deadline(); ok {
		// A unit its host's breaker holds waits within the job's time, less a moment to
		// record its dead letter: cut short, it would be tried again only to meet the
		// same breaker.
		uctx = retry.WaitUntil(uctx, jobEnd.Add(-jobEndMargin))
	}
	_, end, _ := wr.r.unit(uctx, wt.task, wt.env, u, nil, func(_ store.Unit, st store.State) {
		if st == store.Failed {
			w.failed.Add(1) // a unit the output listed as failed
		}
	})
	switch end {
	case store.Done:
		w.done.Add(1)
	case store.Failed:
		w.failed.Add(1)
	case store.Interrupted:
		return cmp.Or(ctx.Err(), context.Canceled)
	case store.Pending:
		return errors.New("the unit's failure could not be recorded (the store is unavailable)")
	}
	return nil
}

// jobEndMargin is how long before its job's time ends a unit stops waiting for its
// host's breaker, to record its dead letter.
const jobEndMargin = 5 * time.Second

// mask keeps the flows' secrets out of what the pool records of a job's failure.
func (w *UnitWorker) mask(err error) error {
	if err == nil || w.Secrets == nil {
		return err
	}
	return errors.New(w.Secrets.String(err.Error()))
}

// run returns the run, loaded, and its status, current; idle runs are forgotten. A run
// whose flow could not be loaded is tried again by the next unit.
func (w *UnitWorker) run(ctx context.Context, id int64) (*workerRun, store.State, error) {
	w.mu.Lock()
	if w.runs == nil {
		w.runs = map[int64]*workerRun{}
	}
	now := time.Now()
	for k, r := range w.runs {
		if now.Sub(r.used) > 10*time.Minute {
			delete(w.runs, k)
		}
	}
	wr := w.runs[id]
	// Only a running status is taken from the cache: a run seen interrupted may have
	// been resumed since, and its units must not be skipped.
	fresh := wr != nil && wr.status == store.Running && now.Sub(wr.checked) < runStatusFor
	if wr != nil {
		wr.used = now
	}
	var status store.State
	if fresh {
		status = wr.status
	}
	w.mu.Unlock()
	if fresh {
		return wr, status, nil
	}
	info, err := w.Store.Runs.RunInfo(ctx, id)
	if err != nil {
		return nil, "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if wr = w.runs[id]; wr == nil {
		log := cmp.Or(w.Logger, slog.Default()).With("run", id)
		f, err := recordedFlow(info, flows.Options{Registry: w.Registry, Secrets: w.Secrets, LookupEnv: workerEnv})
		if err != nil {
			return nil, "", fmt.Errorf("run %d: %w", id, err)
		}
		wr = &workerRun{used: now, tasks: map[string]*workerTask{}, flow: f,
			r: newRunner(f, RunOptions{Store: w.Store, HTTP: w.HTTP, Logger: log, Area: info.Area, Memory: w.Memory, Process: w.ID}, log, id)}
		w.runs[id] = wr
	}
	wr.status, wr.checked = info.Status, now
	return wr, info.Status, nil
}

// workerEnv is the environment a worker expands a recorded flow's ${VAR}s from: its own,
// but never geoflow's settings (GEOFLOW_*, the database's URL and the UI's token among
// them), which a flow written into the database could otherwise send to any host.
func workerEnv(name string) (string, bool) {
	if strings.HasPrefix(name, "GEOFLOW_") {
		return "", false
	}
	return os.LookupEnv(name)
}

// task returns the run's task, built once.
func (w *UnitWorker) task(wr *workerRun, id string) (*workerTask, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := wr.tasks[id]; wt != nil {
		return wt, nil
	}
	t := wr.flow.Task(id)
	if t == nil {
		return nil, fmt.Errorf("the flow of run %d has no task %q", wr.r.runID, id)
	}
	task, err := t.Config.New(t.ID)
	if err != nil {
		return nil, fmt.Errorf("building task %q: %w", t.ID, err)
	}
	wt := &workerTask{task: task, env: wr.r.env(t)}
	if src, ok := t.Config.(tasks.Source); ok {
		wt.url = src.SourceURL()
	}
	wr.tasks[id] = wt
	return wt, nil
}

// recordedFlow is the flow a run recorded, parsed again; for runs recorded before flows
// were kept, the file it named.
func recordedFlow(info store.RunInfo, opts flows.Options) (*flows.Flow, error) {
	var f *flows.Flow
	var err error
	switch {
	case info.FlowText != "":
		f, err = flows.Parse(cmp.Or(info.FlowFile, info.Flow), []byte(info.FlowText), opts)
	case info.FlowFile != "":
		f, err = flows.Load(info.FlowFile, opts)
	default:
		return nil, fmt.Errorf("run %d recorded no flow; run the flow again instead", info.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("loading the flow of run %d: %w", info.ID, err)
	}
	if f.Name != info.Flow {
		return nil, fmt.Errorf("run %d was of flow %q but its flow now defines flow %q", info.ID, info.Flow, f.Name)
	}
	return f, nil
}
