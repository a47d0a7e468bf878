package gpkg

import (
	"context"
	"fmt"

	"github.com/geoflow/geoflow/store"
)

// appendHosts appends the JSON array ?1 to a hosts column's array, in SQLite's JSON
// functions.
const appendHosts = `(SELECT json_group_array(json(value)) FROM
	(SELECT value FROM json_each(hosts) UNION ALL SELECT value FROM json_each(?1)))`

// addExecutionSQL appends an execution's hosts to a unit's and records its worker.
const addExecutionSQL = `UPDATE geoflow_units SET worker = NULLIF(?2, ''), hosts = ` + appendHosts + `
	WHERE run_id = ?3 AND task = ?4 AND key = ?5`

// AddExecution implements store.UnitTx.
func (u *unitTx) AddExecution(ctx context.Context, x store.Execution) error {
	hosts, err := x.HostsJSON()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("recording the requests of unit %s", u.ref.Key)
	tx, err := u.begin(ctx, addExecutionSQL)
	if err != nil {
		return err
	}
	st, err := u.s.stmt(ctx, tx, addExecutionSQL)
	if err != nil {
		return translate(what, err)
	}
	_, err = st.ExecContext(ctx, hosts, x.Worker, u.ref.RunID, u.ref.TaskID, u.ref.Key)
	return translate(what, err)
}

// AddTaskExecution implements store.Runs.
func (s *Store) AddTaskExecution(ctx context.Context, runID int64, task string, x store.Execution) error {
	hosts, err := x.HostsJSON()
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `UPDATE geoflow_run_tasks SET hosts = `+appendHosts+` WHERE run_id = ?2 AND task = ?3`,
		hosts, runID, task)
	return translate(fmt.Sprintf("recording the requests of task %q", task), err)
}

// runHosts sums what run id's requests asked of each host, from its units and tasks, in
// total and by the process that sent them (store.RunHosts).
func (s *Store) runHosts(ctx context.Context, id int64) (store.RunHosts, error) {
	what := fmt.Sprintf("summing the requests of run %d", id)
	rows, err := s.r.QueryContext(ctx, `SELECT coalesce(json_extract(e.value, '$.worker'), ''), json_extract(e.value, '$.host'),
			coalesce(sum(json_extract(e.value, '$.requests')), 0), coalesce(sum(json_extract(e.value, '$.retries')), 0),
			coalesce(sum(json_extract(e.value, '$.rate_limited')), 0), coalesce(sum(json_extract(e.value, '$.waited_ms')), 0),
			coalesce(sum(json_extract(e.value, '$.breaker_opened')), 0)
		FROM (SELECT hosts FROM geoflow_units WHERE run_id = ?1 AND hosts <> '[]'
			UNION ALL SELECT hosts FROM geoflow_run_tasks WHERE run_id = ?1) s, json_each(s.hosts) e
		GROUP BY 1, 2`, id)
	if err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	defer rows.Close()
	var counts []store.HostCount
	for rows.Next() {
		var c store.HostCount
		if err := rows.Scan(&c.Worker, &c.Host, &c.Requests, &c.Retries, &c.RateLimited, &c.WaitedMS, &c.BreakerOpened); err != nil {
			return store.RunHosts{}, translate(what, err)
		}
		counts = append(counts, c)
	}
	if err := rows.Err(); err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	units, err := s.unitsByWorker(ctx, id)
	if err != nil {
		return store.RunHosts{}, translate(what, err)
	}
	return store.CollectHosts(counts, units), nil
}

// unitsByWorker counts the run's units by the process that executed them last.
func (s *Store) unitsByWorker(ctx context.Context, id int64) (map[string]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT worker, count(*) FROM geoflow_units WHERE run_id = ? AND worker IS NOT NULL GROUP BY 1`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	units := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		units[name] = n
	}
	return units, rows.Err()
}
