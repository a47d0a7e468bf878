package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// proc is a geoflow worker process a test started.
type proc struct {
	id  string
	cmd *exec.Cmd
	out *strings.Builder
}

// startWorkers starts n geoflow worker processes, w1 to wn, killed when the test ends.
func startWorkers(ctx context.Context, t *testing.T, bin string, env []string, n int) []*proc {
	t.Helper()
	var workers []*proc
	for i := range n {
		p := &proc{id: fmt.Sprintf("w%d", i+1), out: &strings.Builder{}}
		p.cmd = exec.CommandContext(ctx, bin, "worker", "--id", p.id, "--concurrency", "4", "--rescue-after", "10s", "--grace", "10s")
		p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, p)
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	}
	return workers
}

// stopWorkers stops the workers with SIGTERM, as a person would, and checks that each
// stopped cleanly.
func stopWorkers(t *testing.T, workers []*proc) {
	t.Helper()
	for _, p := range workers {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range workers {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", p.id, err, p.out.String())
		}
	}
}

// TestPoolWorkerKilled runs a distributed harvest on three geoflow worker processes and
// SIGKILLs one with units in flight: River's rescuer gives its units to the others, the
// run ends done, and every feature is stored once. The surviving workers then stop
// cleanly on SIGTERM and geoflow workers list shows what each did.
func TestPoolWorkerKilled(t *testing.T) {
	bin := buildGeoflow(t)
	db := testdb.URL(t)
	fx := wfsserver.New(wfsserver.Options{Features: 3000, CountDefault: 100, ImplementsSorting: true, Latency: 150 * time.Millisecond})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	flow := dlqFlow(t, srv.URL)
	env := append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	migrate := exec.CommandContext(ctx, bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}

	workers := startWorkers(ctx, t, bin, env, 3)

	run := exec.CommandContext(ctx, bin, "run", flow, "--distributed", "--progress", "log")
	var runOut strings.Builder
	run.Env, run.Stdout, run.Stderr = env, &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	victim := workers[2]
	var inFlight int64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never had units in flight\n%s", victim.id, runOut.String())
		}
		if !tableExists(t, db, "river_job") {
			continue
		}
		inFlight = testdb.Count(t, db, `SELECT count(*) FROM river_job WHERE kind = 'geoflow_unit' AND state = 'running'
			AND attempted_by[array_length(attempted_by, 1)] = $1`, victim.id)
		if inFlight >= 2 {
			break
		}
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()
	workers = workers[:2]

	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, runOut.String())
	}
	checkComplete(t, db, featuresIn(fx, harvestArea))
	if st := testdb.Query(t, db, "SELECT status FROM geoflow_runs WHERE id = 1")[0][0]; st != "done" {
		t.Errorf("run status %v, want done", st)
	}
	taken := testdb.Count(t, db, `SELECT count(*) FROM river_job WHERE kind = 'geoflow_unit' AND state = 'completed'
		AND $1 = ANY(attempted_by) AND attempted_by[array_length(attempted_by, 1)] <> $1`, victim.id)
	if taken < inFlight {
		t.Errorf("%d of the %d units in flight on the killed worker were completed by another", taken, inFlight)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM geoflow_dlq"); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}

	stopWorkers(t, workers)
	code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "workers", "list", "--all")
	if code != 0 {
		t.Fatalf("workers list: exit %d: %s", code, errs)
	}
	states := map[string]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 {
			states[f[0]] = f[1]
		}
	}
	if states["w1"] != "stopped" || states["w2"] != "stopped" || states["w3"] != "silent" {
		t.Errorf("workers list: %v, want w1 and w2 stopped, w3 silent:\n%s", states, out)
	}
}

// TestPoolAdoptsOrphanedRun SIGKILLs the process that started a distributed run once a
// third of its units are done: a worker of the pool adopts the run, which ends done
// without anyone typing --resume, with every feature stored once, and runs show (and
// its JSON) names the worker that finished it.
func TestPoolAdoptsOrphanedRun(t *testing.T) {
	bin := buildGeoflow(t)
	db := testdb.URL(t)
	fx := wfsserver.New(wfsserver.Options{Features: 6000, CountDefault: 100, ImplementsSorting: true, Latency: 300 * time.Millisecond})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	flow := dlqFlow(t, srv.URL)
	env := append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	migrate := exec.CommandContext(ctx, bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	workers := startWorkers(ctx, t, bin, env, 3)

	run := exec.CommandContext(ctx, bin, "run", flow, "--distributed", "--progress", "log")
	var runOut strings.Builder
	run.Env, run.Stdout, run.Stderr = env, &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var total, ended int64
	for deadline := time.Now().Add(time.Minute); total == 0 || ended*3 < total; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a third of the units never ended (%d of %d)\n%s", ended, total, runOut.String())
		}
		if tableExists(t, db, "geoflow_units") {
			total = testdb.Count(t, db, "SELECT count(*) FROM geoflow_units")
			ended = testdb.Count(t, db, "SELECT count(*) FROM geoflow_units WHERE state IN ('done', 'failed')")
		}
	}
	if err := run.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	open := testdb.Count(t, db, "SELECT count(*) FROM geoflow_units WHERE state NOT IN ('done', 'failed')")
	if open == 0 {
		t.Fatalf("every unit had ended when the starting process was killed: nothing to adopt\n%s", runOut.String())
	}
	t.Logf("the starting process killed with %d of %d units open", open, total)

	var status string
	for deadline := time.Now().Add(2 * time.Minute); status != "done"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphaned run is still %s two minutes after its starting process was killed\n%s", status, workerLogs(workers))
		}
		status = testdb.Query(t, db, "SELECT status FROM geoflow_runs WHERE id = 1")[0][0].(string)
		if status != "running" && status != "done" {
			t.Fatalf("the orphaned run ended %s, want done\n%s", status, workerLogs(workers))
		}
	}
	checkComplete(t, db, featuresIn(fx, harvestArea))
	if n := testdb.Count(t, db, "SELECT count(*) FROM geoflow_dlq"); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
	code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "runs", "show", "1")
	t.Logf("runs show 1:\n%s", out)
	if code != 0 || !regexp.MustCompile(`finished by\s+worker w[123] \(adopted .*after the starting process was gone\)`).MatchString(out) {
		t.Errorf("runs show 1: exit %d, want a worker named as having finished it:\n%s%s", code, out, errs)
	}
	code, out, errs = geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "runs", "show", "1", "--json")
	var rec struct {
		Status     string     `json:"status"`
		FinishedBy string     `json:"finished_by"`
		AdoptedAt  *time.Time `json:"adopted_at"`
	}
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || rec.Status != "done" ||
		!strings.HasPrefix(rec.FinishedBy, "worker w") || rec.AdoptedAt == nil {
		t.Errorf("runs show 1 --json: exit %d, %v, %+v, want done, finished by a worker, adopted at a time\n%s%s", code, err, rec, out, errs)
	}
	stopWorkers(t, workers)
}

// workerLogs is what the workers wrote, for a failing test's message.
func workerLogs(workers []*proc) string {
	var b strings.Builder
	for _, p := range workers {
		fmt.Fprintf(&b, "--- %s\n%s", p.id, p.out.String())
	}
	return b.String()
}
