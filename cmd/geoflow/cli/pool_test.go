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
	"github.com/geoflow/geoflow/store"
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

// workerProc is one geoflow worker process.
type workerProc struct {
	id  string
	cmd *exec.Cmd
	out *lockedBuffer
}

// poolRun is a distributed harvest of the sample WFS on n geoflow worker processes, all
// with the default flags (no --rescue-after), started and running.
type poolRun struct {
	db      string
	fx      *wfsserver.Server
	workers []*workerProc
	run     *exec.Cmd
	runOut  *lockedBuffer
}

func startPoolRun(t *testing.T, n int, latency time.Duration) *poolRun {
	t.Helper()
	bin := buildGeoflow(t)
	p := &poolRun{db: testdb.URL(t), runOut: &lockedBuffer{}}
	p.fx = wfsserver.New(wfsserver.Options{Features: 3000, CountDefault: 100, ImplementsSorting: true, Latency: latency})
	srv := httptest.NewServer(p.fx)
	t.Cleanup(srv.Close)
	flow := dlqFlow(t, srv.URL)
	env := append(os.Environ(), "GEOFLOW_DATABASE_URL="+p.db)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	migrate := exec.CommandContext(ctx, bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	for i := range n {
		w := &workerProc{id: fmt.Sprintf("w%d", i+1), out: &lockedBuffer{}}
		w.cmd = exec.CommandContext(ctx, bin, "worker", "--id", w.id, "--concurrency", "4", "--grace", "10s")
		w.cmd.Env, w.cmd.Stdout, w.cmd.Stderr = env, w.out, w.out
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.workers = append(p.workers, w)
	}
	t.Cleanup(func() {
		for _, w := range p.workers {
			_ = w.cmd.Process.Signal(syscall.SIGCONT)
			_ = w.cmd.Process.Kill()
		}
	})
	p.run = exec.CommandContext(ctx, bin, "run", flow, "--distributed", "--progress", "log")
	p.run.Env, p.run.Stdout, p.run.Stderr = env, p.runOut, p.runOut
	if err := p.run.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// running lists the unit jobs running under worker id.
func (p *poolRun) running(t *testing.T, id string) []int64 {
	t.Helper()
	if !tableExists(t, p.db, "river_job") {
		return nil
	}
	var ids []int64
	for _, r := range testdb.Query(t, p.db, `SELECT id FROM river_job WHERE kind = 'geoflow_unit' AND state = 'running'
		AND attempted_by[array_length(attempted_by, 1)] = $1`, id) {
		ids = append(ids, r[0].(int64))
	}
	return ids
}

// inFlight waits for worker w to have at least n units running and returns their jobs.
func (p *poolRun) inFlight(t *testing.T, w *workerProc, n int) []int64 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never had %d units in flight\n%s", w.id, n, p.runOut.String())
		}
		if jobs := p.running(t, w.id); len(jobs) >= n {
			return jobs
		}
	}
}

// takenBack waits until none of jobs runs under worker id any more and returns how long
// that took from since: the pool must take them within the worker's silence and one
// report of the others' (plus a margin for a loaded machine). A job whose row the worker
// has locked is its own still: it was paused in the unit's commit, which it may finish.
func (p *poolRun) takenBack(t *testing.T, id string, jobs []int64, since time.Time) time.Duration {
	t.Helper()
	for deadline := since.Add(store.WorkerSilent + 2*store.WorkerReport); ; time.Sleep(50 * time.Millisecond) {
		n := testdb.Count(t, p.db, `SELECT count(*) FROM (SELECT id FROM river_job WHERE id = ANY($1) AND state = 'running'
			AND attempted_by[array_length(attempted_by, 1)] = $2 FOR UPDATE SKIP LOCKED) j`, jobs, id)
		if n == 0 {
			return time.Since(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %s's units still running under it %s after it fell silent", n, id, time.Since(since).Round(time.Second))
		}
	}
}

// finish waits for the run, checks it stored every feature once, done, with no dead
// letter and each unit committed once, stops the workers left with SIGTERM and returns
// what geoflow workers list --all says of each.
func (p *poolRun) finish(t *testing.T) map[string]string {
	t.Helper()
	if err := p.run.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, p.runOut.String())
	}
	checkComplete(t, p.db, featuresIn(p.fx, harvestArea))
	if st := testdb.Query(t, p.db, "SELECT status FROM geoflow_runs WHERE id = 1")[0][0]; st != "done" {
		t.Errorf("run status %v, want done", st)
	}
	if n := testdb.Count(t, p.db, "SELECT count(*) FROM geoflow_dlq"); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
	if n := testdb.Count(t, p.db, "SELECT count(*) FROM geoflow_units WHERE attempts <> 1 OR state <> 'done'"); n != 0 {
		t.Errorf("%d units not done or recorded more than once", n)
	}
	for _, w := range p.workers {
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range p.workers {
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", w.id, err, w.out.String())
		}
	}
	code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": p.db}, "workers", "list", "--all")
	if code != 0 {
		t.Fatalf("workers list: exit %d: %s", code, errs)
	}
	states := map[string]string{}
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 {
			states[f[0]] = f[1]
		}
	}
	return states
}

// TestPoolWorkerKilled runs a distributed harvest on three geoflow worker processes with
// the default flags and SIGKILLs one with units in flight: the others take its units
// once it has been silent for store.WorkerSilent (not after --rescue-after, 15 minutes),
// the run ends done, and every unit and feature is stored once. The surviving workers
// then stop cleanly on SIGTERM and geoflow workers list shows what each did.
func TestPoolWorkerKilled(t *testing.T) {
	p := startPoolRun(t, 3, 150*time.Millisecond)
	victim := p.workers[2]
	p.inFlight(t, victim, 2)
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = victim.cmd.Wait()
	p.workers = p.workers[:2]
	jobs := p.running(t, victim.id) // what it held when it died
	if len(jobs) == 0 {
		t.Fatal("the killed worker held no unit")
	}
	t.Logf("the killed worker's %d units taken back %s after the kill", len(jobs), p.takenBack(t, victim.id, jobs, killed).Round(100*time.Millisecond))

	states := p.finish(t)
	taken := testdb.Count(t, p.db, `SELECT count(*) FROM river_job WHERE id = ANY($1) AND state = 'completed'
		AND attempted_by[array_length(attempted_by, 1)] <> $2`, jobs, victim.id)
	if taken != int64(len(jobs)) {
		t.Errorf("%d of the %d units in flight on the killed worker were completed by another", taken, len(jobs))
	}
	if states["w1"] != "stopped" || states["w2"] != "stopped" || states["w3"] != "silent" {
		t.Errorf("workers list: %v, want w1 and w2 stopped, w3 silent", states)
	}
}

// TestPoolWorkerPaused SIGSTOPs a worker with units in flight until the pool has taken
// them back, then SIGCONTs it: the worker finds its units taken and stops them without
// writing (each unit is recorded once, by the worker that took it over), and goes on as
// a member of the pool, stopping cleanly on SIGTERM.
func TestPoolWorkerPaused(t *testing.T) {
	p := startPoolRun(t, 2, 300*time.Millisecond)
	victim := p.workers[1]
	jobs := p.inFlight(t, victim, 3)
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Logf("the paused worker's %d units taken back %s after the pause", len(jobs), p.takenBack(t, victim.id, jobs, paused).Round(100*time.Millisecond))
	if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(store.WorkerSilent); !strings.Contains(victim.out.String(), "taken back"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not stop the units taken back from it:\n%s", victim.out.String())
		}
	}
	for _, line := range strings.Split(victim.out.String(), "\n") {
		if strings.Contains(line, "taken back") {
			t.Log(line)
		}
	}
	states := p.finish(t)
	if states["w1"] != "stopped" || states["w2"] != "stopped" {
		t.Errorf("workers list: %v, want w1 and w2 stopped", states)
	}
}

// TestPoolRunSummaryHosts runs a distributed harvest of a quota-limited host on three
// geoflow worker processes: the summary of geoflow run --distributed says the requests and
// the 429s the server counted, exactly (the workers sent nearly all of them), and splits
// them by process.
func TestPoolRunSummaryHosts(t *testing.T) {
	bin := buildGeoflow(t)
	db := testdb.URL(t)
	fx, url, flow := quotaFixture(t)
	env := append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	migrate := exec.CommandContext(ctx, bin, "migrate", "up")
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	var workers []*exec.Cmd
	for i := range 3 {
		w := exec.CommandContext(ctx, bin, "worker", "--id", fmt.Sprintf("w%d", i+1), "--concurrency", "4", "--grace", "5s")
		w.Env = env
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	defer func() {
		for _, w := range workers {
			_ = w.Process.Signal(syscall.SIGTERM)
			_ = w.Wait()
		}
	}()
	run := exec.CommandContext(ctx, bin, "run", flow, "--distributed", "--progress", "off")
	run.Env = env
	var out, errs strings.Builder
	run.Stdout, run.Stderr = &out, &errs
	if err := run.Run(); err != nil {
		t.Fatalf("run: %v\n%s%s", err, out.String(), errs.String())
	}
	served := fx.Stats()
	requests, throttled := summaryHost(t, out.String(), url)
	if served.TooManyRequests == 0 || requests != served.Requests || throttled != served.TooManyRequests {
		t.Errorf("the summary says %d requests, %d answered 429; the server counted %d and %d (want some 429s)\n%s",
			requests, throttled, served.Requests, served.TooManyRequests, out.String())
	}
	for _, w := range []string{"by process:", "    w1, ", "    w2, ", "    w3, ", "(this process)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the summary lacks %q:\n%s", w, out.String())
		}
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
	code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "runs", "show", "1", "--wide")
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
