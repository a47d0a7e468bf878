package cli_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

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

	type proc struct {
		id  string
		cmd *exec.Cmd
		out *strings.Builder
	}
	var workers []*proc
	for i := range 3 {
		p := &proc{id: fmt.Sprintf("w%d", i+1), out: &strings.Builder{}}
		p.cmd = exec.CommandContext(ctx, bin, "worker", "--id", p.id, "--concurrency", "4", "--rescue-after", "10s", "--grace", "10s")
		p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, p)
	}
	defer func() {
		for _, p := range workers {
			_ = p.cmd.Process.Kill()
		}
	}()

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
