package postgis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/store"
)

// A worker that stops reporting (killed, its machine lost, paused, cut off from the
// database) is taken for dead after store.WorkerSilent, and the units it held are made
// available again at once (RescueUnits), by every live worker as it reports and by the
// processes following their runs. River's own rescuer, which waits for the unit's whole
// time (RescueAfter) and runs every 30 s on the pool's leader, stays for a worker that
// reports but whose unit never ends.
//
// A worker taken for dead may be alive. Two guards keep a unit from being committed twice
// and River's bookkeeping of one execution from landing on another:
//   - every execution is a take (the job's attempted_at and attempted_by, new at each
//     take), and a worker's writes of the unit's state are refused (store.ErrUnitTaken)
//     unless its job is still running under that take, checked under a lock on the job's
//     row until the write commits (holdTake);
//   - a worker looks at its takes as it reports, cancels those taken back, and, as each
//     ends, waits until no other worker runs the job before handing River its result
//     (settle): River records a result against the job's id, whoever runs it now.

// take is one execution of a unit's job by a worker.
type take struct {
	job    int64
	at     time.Time // the job's attempted_at, set anew at every take
	worker string
	unit   store.UnitRef
}

// takeKey is the context key of the take a worker's execution writes under.
type takeKey struct{}

func withTake(ctx context.Context, t take) context.Context {
	return context.WithValue(ctx, takeKey{}, t)
}

// holdTake is called in the transaction of a write of unit ref's state. When ctx carries
// the execution of that unit's job by a worker (a local run's units have none; the parts
// a committed unit dead-letters are other units), it checks that the job still runs under
// that take, and locks the job's row until tx ends, so that a rescue waits for the unit's
// commit: the job, taken again, then finds the unit done. A job no longer running under
// the take gives store.ErrUnitTaken.
func holdTake(ctx context.Context, tx pgx.Tx, ref store.UnitRef) error {
	t, ok := ctx.Value(takeKey{}).(take)
	if !ok || t.unit != ref {
		return nil
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM river_job WHERE id = $1 AND state = 'running' AND attempted_at = $2
		AND attempted_by[array_length(attempted_by, 1)] = $3 FOR SHARE`, t.job, t.at, t.worker).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrUnitTaken
	}
	return translate(fmt.Sprintf("checking that job %d is still this worker's", t.job), err)
}

// unitWrite runs write, a write of unit ref's state, on the pool, or, for a worker's
// execution of that unit, in a transaction behind holdTake.
func (s *Store) unitWrite(ctx context.Context, ref store.UnitRef, write func(q querier) error) error {
	if t, ok := ctx.Value(takeKey{}).(take); !ok || t.unit != ref {
		return write(s.pool)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := holdTake(ctx, tx, ref); err != nil {
			return err
		}
		return write(tx)
	})
}

// RescueUnits implements store.Queue. It writes what River's rescuer writes (JobRescueMany):
// the lost attempt appended to the job's errors, its rescue count in the metadata, and the
// job available now, or discarded once its attempts are spent; the attempt itself was
// counted when the worker took the job. A worker is live if it reported within
// store.WorkerSilent, has not stopped, and was already running when it took the job (one
// started again under the same id has lost what its previous process held). Concurrent
// rescues take each job once; a job whose row is locked is left for the next rescue: a
// rescue in progress elsewhere, or a silent worker paused in its unit's commit, past
// holdTake (it still holds the unit, and commits it if it comes back; if it died, its
// transaction ends with its connection).
func (s *Store) RescueUnits(ctx context.Context) (int64, []string, error) {
	silent := store.WorkerSilent
	rows, err := s.pool.Query(ctx, `
		WITH lost AS (
			SELECT j.id FROM river_job j
			WHERE j.state = 'running' AND j.kind = $1
				AND NOT EXISTS (SELECT 1 FROM geoflow_workers w WHERE w.id = j.attempted_by[array_length(j.attempted_by, 1)]
					AND w.stopped_at IS NULL AND w.seen_at > now() - make_interval(secs => $2) AND w.started_at <= j.attempted_at)
			FOR UPDATE OF j SKIP LOCKED)
		UPDATE river_job j SET
			state = (CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END)::river_job_state,
			finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
			scheduled_at = CASE WHEN j.attempt >= j.max_attempts THEN j.scheduled_at ELSE now() END,
			errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', greatest(j.attempt, 0),
				'error', format('its worker %s was taken for dead (no report for %s)', j.attempted_by[array_length(j.attempted_by, 1)], $3::text),
				'trace', '')),
			metadata = j.metadata || jsonb_build_object('river:rescue_count', coalesce(CASE
				WHEN jsonb_typeof(j.metadata -> 'river:rescue_count') = 'number' THEN (j.metadata ->> 'river:rescue_count')::int END, 0) + 1)
		FROM lost WHERE j.id = lost.id
		RETURNING coalesce(j.attempted_by[array_length(j.attempted_by, 1)], '')`,
		UnitKind, silent.Seconds(), silent.String())
	if err != nil {
		return 0, nil, translate("giving back the units of workers taken for dead", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, nil, translate("giving back the units of workers taken for dead", err)
	}
	var workers []string
	seen := map[string]bool{}
	for _, w := range held {
		if !seen[w] {
			seen[w] = true
			workers = append(workers, w)
		}
	}
	return int64(len(held)), workers, nil
}

// takes are the executions a worker has in flight, each with the cancel of its context.
type takes struct {
	mu sync.Mutex
	m  map[*take]context.CancelCauseFunc
}

// add records t until the returned func is called.
func (ts *takes) add(t *take, cancel context.CancelCauseFunc) (remove func()) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[*take]context.CancelCauseFunc{}
	}
	ts.m[t] = cancel
	return func() {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		delete(ts.m, t)
	}
}

// cancelTaken cancels, with store.ErrUnitTaken as the cause, the executions of worker
// whose job no longer runs under their take: the pool took them back while the worker
// was silent. It returns how many.
func (s *Store) cancelTaken(ctx context.Context, worker string, ts *takes) (int, error) {
	ts.mu.Lock()
	list := make([]*take, 0, len(ts.m))
	ids, ats := make([]int64, 0, len(ts.m)), make([]time.Time, 0, len(ts.m))
	for t := range ts.m {
		list = append(list, t)
		ids, ats = append(ids, t.job), append(ats, t.at)
	}
	ts.mu.Unlock()
	if len(list) == 0 {
		return 0, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT t.i FROM unnest($1::bigint[], $2::timestamptz[]) WITH ORDINALITY AS t(id, at, i)
		WHERE NOT EXISTS (SELECT 1 FROM river_job j WHERE j.id = t.id AND j.state = 'running' AND j.attempted_at = t.at
			AND j.attempted_by[array_length(j.attempted_by, 1)] = $3)`, ids, ats, worker)
	if err != nil {
		return 0, translate("checking the worker's units in flight", err)
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, translate("checking the worker's units in flight", err)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, i := range gone {
		if cancel, ok := ts.m[list[i-1]]; ok {
			cancel(store.ErrUnitTaken)
		}
	}
	return len(gone), nil
}

// holds tells whether the job still runs under t; when the database cannot say, it does.
func (s *Store) holds(ctx context.Context, t take) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.WorkerReport)
	defer cancel()
	var held bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job WHERE id = $1 AND state = 'running'
		AND attempted_at = $2 AND attempted_by[array_length(attempted_by, 1)] = $3)`, t.job, t.at, t.worker).Scan(&held)
	return held || err != nil
}

// settleFor is how long a taken-back job is kept from being taken once its stale
// execution has ended: time for River to record that execution's result (in batches,
// every 50 ms), which lands only on a running job, while no one runs it.
const settleFor = 5 * time.Second

// settle waits, for an execution whose job was taken back, until no worker runs the job
// (another took it and is executing the unit), then keeps the job from being taken for
// settleFor, and returns: River may then record the execution's result, which touches a
// job only while it runs. It gives up when ctx ends (the worker stopping hard, the unit's
// time out).
func (s *Store) settle(ctx context.Context, job int64) {
	for {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), store.WorkerReport)
		var running bool
		err := s.pool.QueryRow(c, `
			WITH j AS (SELECT id, state FROM river_job WHERE id = $1 FOR UPDATE),
			held AS (UPDATE river_job r SET scheduled_at = greatest(r.scheduled_at, now() + make_interval(secs => $2))
				FROM j WHERE r.id = j.id AND j.state IN ('available', 'retryable', 'scheduled'))
			SELECT coalesce(bool_or(state = 'running'), false) FROM j`, job, settleFor.Seconds()).Scan(&running)
		cancel()
		if err == nil && !running {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
