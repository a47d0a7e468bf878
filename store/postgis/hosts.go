package postgis

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/store"
)

// AddExecution implements store.UnitTx: the execution's hosts are appended to the unit's,
// in the unit's transaction (queued: sent with the commit).
func (u *unitTx) AddExecution(ctx context.Context, x store.Execution) error {
	hosts, err := x.HostsJSON()
	if err != nil {
		return err
	}
	u.queue(fmt.Sprintf("recording the requests of unit %s", u.ref.Key), `UPDATE geoflow_units SET worker = NULLIF($4, ''), hosts = hosts || $5::jsonb
		WHERE run_id = $1 AND task = $2 AND key = $3`, u.ref.RunID, u.ref.TaskID, u.ref.Key, x.Worker, hosts)
	return nil
}

// AddTaskExecution implements store.Runs.
func (s *Store) AddTaskExecution(ctx context.Context, runID int64, task string, x store.Execution) error {
	hosts, err := x.HostsJSON()
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `UPDATE geoflow_run_tasks SET hosts = hosts || $3::jsonb WHERE run_id = $1 AND task = $2`,
		runID, task, hosts)
	return translate(fmt.Sprintf("recording the requests of task %q", task), err)
}

// runHosts sums what run id's requests asked of each host, from its units and tasks, in
// total and by the process that sent them (store.RunHosts).
func (s *Store) runHosts(ctx context.Context, id int64) (store.RunHosts, error) {
	what := fmt.Sprintf("summing the requests of run %d", id)
	rows, err := s.pool.Query(ctx, `SELECT coalesce(e->>'worker', ''), e->>'host',
			sum((e->>'requests')::bigint)::bigint, sum((e->>'retries')::bigint)::bigint,
			sum((e->>'rate_limited')::bigint)::bigint, sum((e->>'waited_ms')::bigint)::bigint,
			sum((e->>'breaker_opened')::bigint)::bigint
		FROM (SELECT hosts FROM geoflow_units WHERE run_id = $1 AND hosts <> '[]'
			UNION ALL SELECT hosts FROM geoflow_run_tasks WHERE run_id = $1) s
		CROSS JOIN LATERAL jsonb_array_elements(s.hosts) e
		GROUP BY 1, 2`, id)
	if err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	counts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.HostCount, error) {
		var c store.HostCount
		err := row.Scan(&c.Worker, &c.Host, &c.Requests, &c.Retries, &c.RateLimited, &c.WaitedMS, &c.BreakerOpened)
		return c, err
	})
	if err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	rows, err = s.pool.Query(ctx, `SELECT worker, count(*) FROM geoflow_units WHERE run_id = $1 AND worker IS NOT NULL GROUP BY 1`, id)
	if err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	units := map[string]int64{}
	var name string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error { units[name] = n; return nil }); err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	return store.CollectHosts(counts, units), nil
}
