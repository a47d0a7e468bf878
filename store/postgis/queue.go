package postgis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/geoflow/geoflow/store"
)

var _ store.Queue = (*Store)(nil)

// UnitQueue is the River queue of distributed runs' units; UnitKind their job kind.
const (
	UnitQueue = "geoflow_units"
	UnitKind  = "geoflow_unit"
)

// unitMaxAttempts is how many times a unit's job may be taken. A unit's own faults never
// fail its job (they are the unit's outcome, recorded as a local run records them, dead
// letters included); what does is a worker that died or was stopped hard with the unit in
// flight, or a store that stayed down. Ten such in a row mean the unit itself is the
// trouble: its job is given up and the run's follower dead-letters it (worker_lost).
const unitMaxAttempts = 10

// liveStates are the states of a job that will still execute: a unit has one live job at
// most. Finished jobs (completed, cancelled, discarded) are left out, so a resume can
// enqueue a unit again.
var liveStates = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}

// unitArgs are one unit's job: the unit's reference, nothing else. The worker reads the
// unit (its bbox and spec) and its run's recorded flow from the store.
type unitArgs struct {
	RunID int64  `json:"run_id"`
	Task  string `json:"task"`
	Key   string `json:"key"`
}

func (unitArgs) Kind() string { return UnitKind }

func (unitArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: UnitQueue, MaxAttempts: unitMaxAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: liveStates}}
}

// inserter is the River client that enqueues units (an insert-only client: it works no
// jobs), made once per Store.
func (s *Store) inserter() (*river.Client[pgx.Tx], error) {
	s.rivOnce.Do(func() {
		s.riv, s.rivErr = river.NewClient(riverpgxv5.New(s.pool), &river.Config{Logger: quietLog(nil), SkipUnknownJobCheck: true, Schema: s.schema})
	})
	return s.riv, s.rivErr
}

// rowQuerier is what both the pool and a transaction offer to read one row.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// runDistributed tells whether run's units are jobs, reading it through q (a unit's own
// transaction, which must not wait for a second connection) once per run and process.
func (s *Store) runDistributed(ctx context.Context, q rowQuerier, runID int64) (bool, error) {
	if v, ok := s.distributed.Load(runID); ok {
		return v.(bool), nil
	}
	var d bool
	if err := q.QueryRow(ctx, "SELECT distributed FROM geoflow_runs WHERE id = $1", runID).Scan(&d); err != nil {
		return false, translate(fmt.Sprintf("reading whether run %d is distributed", runID), err)
	}
	s.distributed.Store(runID, d)
	return d, nil
}

// enqueue inserts one job per key in tx; a key whose unit has a live job already gets no
// second one.
func (s *Store) enqueue(ctx context.Context, tx pgx.Tx, runID int64, task string, keys []string) error {
	c, err := s.inserter()
	if err != nil {
		return fmt.Errorf("the job queue: %w", err)
	}
	const batch = 2000
	for len(keys) > 0 {
		n := min(batch, len(keys))
		params := make([]river.InsertManyParams, n)
		for i, k := range keys[:n] {
			params[i] = river.InsertManyParams{Args: unitArgs{RunID: runID, Task: task, Key: k}}
		}
		if _, err := c.InsertManyTx(ctx, tx, params); err != nil {
			return translate(fmt.Sprintf("enqueueing %d units of task %q", n, task), err)
		}
		keys = keys[n:]
	}
	return nil
}

// addDistributed records a distributed run's planned units and enqueues every open unit
// of the task, in one transaction: new units, and on a resume those left pending,
// interrupted or failed (run again, as a local resume does; they are pending again
// until a worker takes them).
func (s *Store) addDistributed(ctx context.Context, runID int64, task string, units []store.Unit) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		const batch = 5000
		for rest := units; len(rest) > 0; {
			n := min(batch, len(rest))
			if err := addUnits(ctx, tx, runID, task, rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		rows, err := tx.Query(ctx, `UPDATE geoflow_units SET state = 'pending'
			WHERE run_id = $1 AND task = $2 AND state <> 'done' RETURNING key`, runID, task)
		if err != nil {
			return translate(fmt.Sprintf("queueing the open units of task %q", task), err)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return translate(fmt.Sprintf("queueing the open units of task %q", task), err)
		}
		return s.enqueue(ctx, tx, runID, task, keys)
	})
}

// TallyUnits implements store.Queue.
func (s *Store) TallyUnits(ctx context.Context, runID int64, task string) (store.UnitTally, error) {
	var t store.UnitTally
	c := &t.Counts
	err := s.pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE state IN ('pending', 'interrupted')),
			count(*) FILTER (WHERE state = 'running'),
			count(*) FILTER (WHERE state = 'done'),
			count(*) FILTER (WHERE state = 'failed'),
			coalesce(sum(features_inserted), 0), coalesce(sum(features_skipped), 0), coalesce(sum(features_updated), 0),
			coalesce(sum(bytes), 0), coalesce(sum(features_rejected), 0), coalesce(sum(features_merged), 0), coalesce(sum(requests), 0)
		FROM geoflow_units WHERE run_id = $1 AND task = $2`, runID, task).
		Scan(&t.Total, &t.Pending, &t.Running, &t.Done, &t.Failed,
			&c.Inserted, &c.Skipped, &c.Updated, &c.Bytes, &c.Rejected, &c.Merged, &c.Requests)
	return t, translate(fmt.Sprintf("counting the units of task %q", task), err)
}

// LostUnits implements store.Queue.
func (s *Store) LostUnits(ctx context.Context, runID int64, task string) ([]store.LostUnit, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.key, coalesce(j.state = 'discarded', false),
			coalesce(j.errors[array_length(j.errors, 1)]->>'error', ''), coalesce(j.attempt, 0)
		FROM geoflow_units u
		LEFT JOIN LATERAL (SELECT state, errors, attempt FROM river_job j
			WHERE j.kind = $3 AND j.args @> jsonb_build_object('run_id', u.run_id, 'task', u.task, 'key', u.key)
			ORDER BY j.id DESC LIMIT 1) j ON true
		WHERE u.run_id = $1 AND u.task = $2 AND u.state IN ('pending', 'running', 'interrupted')
			AND (j.state IS NULL OR j.state::text NOT IN ('available', 'pending', 'running', 'retryable', 'scheduled'))
		ORDER BY u.key`, runID, task, UnitKind)
	if err != nil {
		return nil, translate(fmt.Sprintf("looking for lost units of task %q", task), err)
	}
	var out []store.LostUnit
	var l store.LostUnit
	_, err = pgx.ForEachRow(rows, []any{&l.Key, &l.Given, &l.Error, &l.Attempts}, func() error {
		out = append(out, l)
		return nil
	})
	return out, translate(fmt.Sprintf("looking for lost units of task %q", task), err)
}

// Requeue implements store.Queue.
func (s *Store) Requeue(ctx context.Context, runID int64, task string, keys []string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.enqueue(ctx, tx, runID, task, keys) })
}

// CancelUnits implements store.Queue. It deletes River's rows itself: River's bulk delete
// cannot select jobs by their arguments.
func (s *Store) CancelUnits(ctx context.Context, runID int64) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM river_job WHERE kind = $1
		AND state IN ('available', 'pending', 'retryable', 'scheduled')
		AND args @> jsonb_build_object('run_id', $2::bigint)`, UnitKind, runID)
	if err != nil {
		return 0, translate(fmt.Sprintf("withdrawing the queued units of run %d", runID), err)
	}
	return tag.RowsAffected(), nil
}

// RunningJobs implements store.Queue.
func (s *Store) RunningJobs(ctx context.Context, runID int64) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'running'
		AND args @> jsonb_build_object('run_id', $2::bigint)`, UnitKind, runID).Scan(&n)
	return n, translate(fmt.Sprintf("counting the units of run %d in flight", runID), err)
}

// OrphanedRuns implements store.Queue.
func (s *Store) OrphanedRuns(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.id FROM geoflow_runs r
		WHERE r.distributed AND r.status = 'running' AND `+runStatus+` = 'crashed' ORDER BY r.id`)
	if err != nil {
		return nil, translate("looking for runs whose starting process is gone", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, translate("looking for runs whose starting process is gone", err)
}

// unitWorker hands River's jobs to the function a worker executes units with.
type unitWorker struct {
	river.WorkerDefaults[unitArgs]
	s        *Store
	id       string
	fn       func(ctx context.Context, job store.UnitJob) error
	inFlight takes
}

func (w *unitWorker) Work(ctx context.Context, job *river.Job[unitArgs]) error {
	uj := store.UnitJob{Ref: store.UnitRef{RunID: job.Args.RunID, TaskID: job.Args.Task, Key: job.Args.Key},
		Attempt: job.Attempt, Enqueued: job.CreatedAt}
	if job.AttemptedAt == nil {
		return w.result(ctx, w.fn(ctx, uj))
	}
	t := &take{job: job.ID, at: *job.AttemptedAt, worker: w.id, unit: uj.Ref}
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer w.inFlight.add(t, cancel)()
	err := w.fn(withTake(uctx, *t), uj)
	var snooze *store.SnoozeError
	if err != nil && !errors.As(err, &snooze) && (errors.Is(context.Cause(uctx), store.ErrUnitTaken) || !w.s.holds(ctx, *t)) {
		// Taken back while this worker was silent: the unit wrote nothing, and River
		// must record this execution's end only while no one runs the job.
		w.s.settle(ctx, t.job)
		return river.JobSnooze(0)
	}
	return w.result(ctx, err)
}

// result is what River is told of an execution that ended with err.
func (w *unitWorker) result(ctx context.Context, err error) error {
	var snooze *store.SnoozeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &snooze):
		return river.JobSnooze(snooze.For)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The unit ran out its time (RescueAfter): an attempt, tried again after River's
		// backoff; ten of them and the pool gives it up (a worker_lost dead letter).
		return fmt.Errorf("the unit ran longer than the pool's rescue time: %w", err)
	case ctx.Err() != nil:
		// Stopped hard (the grace ran out): the unit was left as it was, and its job
		// goes back at once to the other workers, costing it no attempt.
		return river.JobSnooze(0)
	}
	return err
}

// Work implements store.Queue.
func (s *Store) Work(ctx context.Context, cfg store.WorkConfig, fn func(ctx context.Context, job store.UnitJob) error) error {
	if cfg.ID == "" || cfg.Concurrency < 1 || cfg.RescueAfter <= 0 {
		return errors.New("postgis: a worker needs an id, a concurrency and a rescue time")
	}
	w := &unitWorker{s: s, id: cfg.ID, fn: fn}
	client, err := s.workClient(cfg, w)
	if err != nil {
		return fmt.Errorf("joining the pool: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM geoflow_workers WHERE seen_at < now() - interval '7 days'`); err != nil {
		return translate("forgetting workers gone for a week", err)
	}
	if err := s.reportWorker(ctx, cfg, false); err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return translate("joining the pool", err)
	}
	tick := time.NewTicker(store.WorkerReport)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			// Reported until the client has stopped, the grace included: a worker
			// finishing its units is not silent.
			s.heartbeat(context.WithoutCancel(ctx), cfg, w)
			continue
		case <-client.Stopped():
		}
		break
	}
	return s.reportWorker(context.WithoutCancel(ctx), cfg, true)
}

// workClient is a worker's River client, executing units with w.
func (s *Store) workClient(cfg store.WorkConfig, w *unitWorker) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	return river.NewClient(riverpgxv5.New(s.pool), &river.Config{
		Schema:  s.schema,
		ID:      cfg.ID,
		Logger:  slog.New(warnings{cfg.Logger}),
		Queues:  map[string]river.QueueConfig{UnitQueue: {MaxWorkers: cfg.Concurrency}},
		Workers: workers,
		// A unit may run RescueAfter; then its context ends (the unit is left
		// interrupted, and tried again later), and a little after, a job still marked
		// running is given to another worker by River's rescuer (on the pool's leader,
		// every 30 s): the backstop for a worker that reports but whose unit never ends
		// (a dead or silent worker's units go back sooner: RescueUnits). The rescuer
		// leaves jobs with no timeout alone, so there must be one.
		JobTimeout:           cfg.RescueAfter,
		RescueStuckJobsAfter: cfg.RescueAfter + max(cfg.RescueAfter/10, 5*time.Second),
		// A job fails only when its worker could not see the unit through (stopped
		// hard, cut off at its time, a store that stayed down): tried again soon, not
		// after River's default attempt^4 seconds (hours by the tenth).
		RetryPolicy:       unitRetry{},
		SoftStopTimeout:   max(cfg.Grace, time.Millisecond),
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 500 * time.Millisecond,
	})
}

// heartbeat is a worker's every report: it reports itself, gives back the units of
// workers taken for dead, and stops its own units that were taken back while it was
// silent (paused, cut off). Each step is bounded by the report's period.
func (s *Store) heartbeat(ctx context.Context, cfg store.WorkConfig, w *unitWorker) {
	log := slog.New(warnings{cfg.Logger})
	ctx, cancel := context.WithTimeout(ctx, store.WorkerReport)
	defer cancel()
	if err := s.reportWorker(ctx, cfg, false); err != nil {
		log.Warn("reporting the worker", "err", err)
		return // cut off: the rest would fail as well
	}
	if n, workers, err := s.RescueUnits(ctx); err != nil {
		log.Warn("giving back the units of workers taken for dead", "err", err)
	} else if n > 0 {
		log.Warn("units of workers taken for dead given back to the pool", "units", n, "workers", workers)
	}
	if n, err := s.cancelTaken(ctx, cfg.ID, &w.inFlight); err != nil {
		log.Warn("checking the worker's units in flight", "err", err)
	} else if n > 0 {
		log.Warn("units taken back while this worker was silent: stopping them", "units", n)
	}
}

// warnings passes River's warnings and errors to a worker's log (nil: nowhere); its
// routine messages (leadership, maintenance runs) are left out.
type warnings struct{ log *slog.Logger }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return w.log != nil && l >= slog.LevelWarn && w.log.Handler().Enabled(ctx, l)
}
func (w warnings) Handle(ctx context.Context, r slog.Record) error {
	return w.log.Handler().Handle(ctx, r)
}
func (w warnings) WithAttrs(as []slog.Attr) slog.Handler {
	if w.log == nil {
		return w
	}
	return warnings{slog.New(w.log.Handler().WithAttrs(as))}
}
func (w warnings) WithGroup(name string) slog.Handler {
	if w.log == nil {
		return w
	}
	return warnings{slog.New(w.log.Handler().WithGroup(name))}
}

// unitRetry spaces a unit job's attempts 2^attempt seconds apart, at most 2 minutes.
type unitRetry struct{}

func (unitRetry) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(min(time.Duration(1<<min(job.Attempt, 7))*time.Second, 2*time.Minute))
}

// reportWorker records the worker and what it did; stopped marks it gone. A worker that
// starts again under the same id is recorded anew; workers gone for a week are forgotten.
func (s *Store) reportWorker(ctx context.Context, cfg store.WorkConfig, stopped bool) error {
	var st store.WorkerStats
	if cfg.Stats != nil {
		st = cfg.Stats()
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO geoflow_workers (id, hostname, pid, version, concurrency, units_done, units_failed, units_snoozed, in_flight)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET seen_at = now(), units_done = $6, units_failed = $7, units_snoozed = $8,
			in_flight = $9, stopped_at = CASE WHEN $10 THEN now() END,
			hostname = $2, pid = $3, version = $4, concurrency = $5,
			started_at = CASE WHEN geoflow_workers.pid <> $3 OR geoflow_workers.stopped_at IS NOT NULL THEN now()
				ELSE geoflow_workers.started_at END`,
		cfg.ID, cfg.Hostname, os.Getpid(), cfg.Version, cfg.Concurrency, st.Done, st.Failed, st.Snoozed, st.InFlight, stopped)
	return translate("reporting the worker", err)
}

// ListWorkers implements store.Queue.
func (s *Store) ListWorkers(ctx context.Context) ([]store.WorkerRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, hostname, version, pid, concurrency, started_at, seen_at, stopped_at,
		units_done, units_failed, units_snoozed, in_flight FROM geoflow_workers ORDER BY started_at DESC, id LIMIT 500`)
	if err != nil {
		return nil, translate("listing the workers", err)
	}
	var out []store.WorkerRecord
	var w store.WorkerRecord
	_, err = pgx.ForEachRow(rows, []any{&w.ID, &w.Hostname, &w.Version, &w.PID, &w.Concurrency, &w.StartedAt, &w.SeenAt, &w.StoppedAt,
		&w.Done, &w.Failed, &w.Snoozed, &w.InFlight}, func() error {
		out = append(out, w)
		return nil
	})
	return out, translate("listing the workers", err)
}
