// Command pool measures geoflow's distributed runs: a pool of geoflow worker processes on
// one PostgreSQL harvesting the sample WFS (internal/devserver/wfsserver), against a
// local run of the same flow.
//
//	go build -o bin/geoflow ./cmd/geoflow
//	bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- go run ./bench/pool -geoflow bin/geoflow
//
// Scenarios (-scenarios, comma-separated):
//
//	harvest  FEATURES parcels, one local run and one distributed run on 3 workers: the units
//	         each worker executed, and the two tables compared feature by feature
//	kill     the same on 3 workers with the default flags, one SIGKILLed once a third of the
//	         units are done: how soon its units are taken back, the run's time against the
//	         harvest scenario's distributed run of this session, and every parcel stored once
//	orphan   FEATURES parcels on 3 workers with geoflow worker's default flags, the process
//	         that started the run SIGKILLed once a third of the units are done: a worker
//	         adopts the run; when its last unit finished, when it ended, features stored
//	quota    a host allowing -quota requests per one-second window (X-RateLimit headers,
//	         Retry-After, 5% 503s): 429s and quota used, one process vs 3 workers, and the
//	         requests and 429s the server counted next to those the run's summary printed
//	scale    a server answering every request in -latency: units per second for 1, 2 and 3
//	         workers, and what the database costs per unit (transactions, connections)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/bench/internal/admits"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

type options struct {
	geoflow     string
	features    int
	quota       int
	latency     time.Duration
	concurrency int
	rescue      time.Duration
	dir         string
	db          string
}

func main() {
	var o options
	var scenarios string
	flag.StringVar(&o.geoflow, "geoflow", "bin/geoflow", "the geoflow binary")
	flag.IntVar(&o.features, "features", 100000, "parcels the harvest, kill and orphan scenarios' server holds")
	flag.IntVar(&o.quota, "quota", 5, "quota scenario: requests per fixed one-second window")
	flag.DurationVar(&o.latency, "latency", 200*time.Millisecond, "scale scenario: the server's time to answer each request")
	flag.IntVar(&o.concurrency, "concurrency", 16, "each worker's --concurrency")
	flag.DurationVar(&o.rescue, "rescue-after", 0, "kill scenario: the workers' --rescue-after (default: not passed, geoflow's default)")
	flag.StringVar(&scenarios, "scenarios", "harvest,kill,orphan,quota,scale", "which to run")
	flag.Parse()
	o.db = os.Getenv("GEOFLOW_DATABASE_URL")
	if o.db == "" {
		fail(errors.New("GEOFLOW_DATABASE_URL is not set: run it under internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL"))
	}
	dir, err := os.MkdirTemp("", "geoflow-pool")
	if err != nil {
		fail(err)
	}
	if os.Getenv("KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Println("logs and flows kept in", dir)
	}
	o.dir = dir
	if out, err := exec.Command(o.geoflow, "migrate", "up").CombinedOutput(); err != nil {
		fail(fmt.Errorf("geoflow migrate up: %v: %s", err, out))
	}
	var unkilled time.Duration // the harvest scenario's distributed run, for the kill scenario's
	for _, s := range strings.Split(scenarios, ",") {
		var err error
		switch strings.TrimSpace(s) {
		case "harvest":
			unkilled, err = harvest(o, false, 0)
		case "kill":
			_, err = harvest(o, true, unkilled)
		case "orphan":
			err = orphan(o)
		case "quota":
			err = quota(o)
		case "scale":
			err = scale(o)
		default:
			err = fmt.Errorf("-scenarios: no scenario %q", s)
		}
		if err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pool:", err)
	os.Exit(1)
}

// server serves srv on loopback, counting what it admitted and throttled.
type server struct {
	url string
	cnt *admits.Counter
	srv *wfsserver.Server
	hs  *http.Server
}

func serve(opts wfsserver.Options) (*server, error) {
	srv := wfsserver.New(opts)
	cnt := &admits.Counter{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: cnt.Wrap(srv)}
	go hs.Serve(ln)
	return &server{url: "http://" + ln.Addr().String() + "/wfs", cnt: cnt, srv: srv, hs: hs}, nil
}

// flow writes a flow harvesting the server's whole extent into table.
func (o options) flow(name, table string, s *server, extra string) (string, error) {
	path := filepath.Join(o.dir, name+".yaml")
	yaml := fmt.Sprintf(`name: %s
defaults:
  retry: {max_attempts: 8, base_delay: 500ms, max_delay: 30s}
%stasks:
  parcels:
    type: wfs
    url: %s
    typename: %s
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: public.%s, mode: append}
`, name, extra, s.url, s.srv.TypeName(), table)
	return path, os.WriteFile(path, []byte(yaml), 0o644)
}

// worker is one geoflow worker process.
type worker struct {
	id  string
	cmd *exec.Cmd
}

// startWorkers starts n workers with geoflow's defaults but for --concurrency and
// --grace; the kill scenario's with -rescue-after when it is set. The orphan scenario's
// have geoflow worker's default flags, --concurrency and --grace included.
func (o options) startWorkers(n int, tag string) ([]*worker, error) {
	var ws []*worker
	for i := range n {
		id := fmt.Sprintf("%s-w%d", tag, i+1)
		args := []string{"worker", "--id", id, "--concurrency", fmt.Sprint(o.concurrency), "--grace", "5s"}
		if tag == "kill" && o.rescue > 0 {
			args = append(args, "--rescue-after", o.rescue.String())
		}
		if tag == "orphan" {
			args = args[:3]
		}
		cmd := exec.Command(o.geoflow, args...)
		logf, err := os.Create(filepath.Join(o.dir, id+".log"))
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		ws = append(ws, &worker{id: id, cmd: cmd})
	}
	return ws, nil
}

func stopWorkers(ws []*worker) {
	for _, w := range ws {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range ws {
		_ = w.cmd.Wait()
	}
}

// run runs geoflow run and returns its wall time and exit status.
func (o options) run(ctx context.Context, name string, args ...string) (time.Duration, string, error) {
	logf, err := os.Create(filepath.Join(o.dir, name+".run.log"))
	if err != nil {
		return 0, "", err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, o.geoflow, append([]string{"run", "--progress=off"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return time.Since(start), "0", nil
	case errors.As(err, &ee):
		return time.Since(start), fmt.Sprint(ee.ExitCode()), nil
	}
	return 0, "", err
}

func connect(ctx context.Context, db string) (*pgx.Conn, error) { return pgx.Connect(ctx, db) }

func scalar[T any](ctx context.Context, c *pgx.Conn, q string, args ...any) T {
	var v T
	if err := c.QueryRow(ctx, q, args...).Scan(&v); err != nil {
		fail(fmt.Errorf("%s: %w", q, err))
	}
	return v
}

// spread is how many units of run each worker completed, from River's jobs.
func spread(ctx context.Context, c *pgx.Conn, runID int64) string {
	rows, err := c.Query(ctx, `SELECT attempted_by[array_length(attempted_by, 1)] AS w, count(*),
			count(*) FILTER (WHERE array_length(attempted_by, 1) > 1)
		FROM geoflow.river_job WHERE kind = 'geoflow_unit' AND state = 'completed' AND args @> jsonb_build_object('run_id', $1::bigint)
		GROUP BY 1 ORDER BY 1`, runID)
	if err != nil {
		fail(err)
	}
	var parts []string
	for rows.Next() {
		var w string
		var n, again int64
		if err := rows.Scan(&w, &n, &again); err != nil {
			fail(err)
		}
		s := fmt.Sprintf("%s %d", w, n)
		if again > 0 {
			s += fmt.Sprintf(" (%d taken over)", again)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// harvest compares a local run with a distributed one on 3 workers and returns the
// distributed run's time; with kill, one worker is SIGKILLed once a third of the units
// are done, and the run's time is compared with unkilled's (when the harvest scenario ran
// before it in this session).
func harvest(o options, kill bool, unkilled time.Duration) (time.Duration, error) {
	ctx := context.Background()
	s, err := serve(wfsserver.Options{Features: o.features, CountDefault: 1000, Seed: 1, ImplementsSorting: true, Latency: 50 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	defer s.hs.Close()
	c, err := connect(ctx, o.db)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	tag := map[bool]string{false: "harvest", true: "kill"}[kill]
	fmt.Printf("\n## %s: %d parcels, 3 workers (--concurrency %d)\n\n", tag, o.features, o.concurrency)
	if kill && o.rescue > 0 {
		fmt.Printf("- the workers' --rescue-after %s\n", o.rescue)
	} else if kill {
		fmt.Println("- the workers' flags: geoflow's defaults (--rescue-after 15m)")
	}
	localTable := tag + "_local"
	if !kill {
		lf, err := o.flow(tag+"_local", localTable, s, "")
		if err != nil {
			return 0, err
		}
		took, exit, err := o.run(ctx, tag+"_local", lf)
		if err != nil {
			return 0, err
		}
		fmt.Printf("- local run: exit %s in %.1f s\n", exit, took.Seconds())
	}
	df, err := o.flow(tag+"_dist", tag+"_dist", s, "")
	if err != nil {
		return 0, err
	}
	ws, err := o.startWorkers(3, tag)
	if err != nil {
		return 0, err
	}
	defer stopWorkers(ws)
	time.Sleep(time.Second)
	var took time.Duration
	var exit string
	done := make(chan error, 1)
	go func() {
		var err error
		took, exit, err = o.run(ctx, tag+"_dist", df, "--distributed")
		done <- err
	}()
	if kill {
		killOne(ctx, c, ws[len(ws)-1], tag+"_dist")
	}
	if err := <-done; err != nil {
		return 0, err
	}
	time.Sleep(time.Second) // River marks jobs completed in batches, just after the units commit
	runID := scalar[int64](ctx, c, "SELECT max(id) FROM geoflow.geoflow_runs WHERE flow = $1", tag+"_dist")
	status := scalar[string](ctx, c, "SELECT status FROM geoflow.geoflow_runs WHERE id = $1", runID)
	units := scalar[int64](ctx, c, "SELECT count(*) FROM geoflow.geoflow_units WHERE run_id = $1", runID)
	once := scalar[int64](ctx, c, "SELECT count(*) FROM geoflow.geoflow_units WHERE run_id = $1 AND attempts = 1", runID)
	fmt.Printf("- distributed run %d: exit %s, %s, %d units (%d recorded once) in %.1f s (%.1f units/s)\n", runID, exit, status, units, once,
		took.Seconds(), float64(units)/took.Seconds())
	if kill && unkilled > 0 {
		fmt.Printf("- against the harvest scenario's distributed run in this session (%.1f s): %+.1f s\n", unkilled.Seconds(), (took - unkilled).Seconds())
	}
	fmt.Printf("- units completed by worker: %s\n", spread(ctx, c, runID))
	stored := scalar[int64](ctx, c, "SELECT count(*) FROM public."+tag+"_dist")
	distinct := scalar[int64](ctx, c, "SELECT count(DISTINCT gf_feature_id) FROM public."+tag+"_dist")
	fmt.Printf("- features stored %d, distinct %d, the server holds %d\n", stored, distinct, s.srv.Len())
	if !kill {
		onlyLocal := scalar[int64](ctx, c, fmt.Sprintf(`SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash, ST_AsBinary(geom) FROM public.%s
			EXCEPT SELECT gf_feature_id, gf_payload_hash, ST_AsBinary(geom) FROM public.%s) x`, localTable, tag+"_dist"))
		onlyDist := scalar[int64](ctx, c, fmt.Sprintf(`SELECT count(*) FROM (SELECT gf_feature_id, gf_payload_hash, ST_AsBinary(geom) FROM public.%s
			EXCEPT SELECT gf_feature_id, gf_payload_hash, ST_AsBinary(geom) FROM public.%s) x`, tag+"_dist", localTable))
		fmt.Printf("- rows (id, payload hash, geometry) only in the local table: %d; only in the distributed one: %d\n", onlyLocal, onlyDist)
	}
	return took, nil
}

// killOne SIGKILLs victim once a third of flow's units are done, then waits for the pool
// to take back the units it held and says how soon that was.
func killOne(ctx context.Context, c *pgx.Conn, victim *worker, flow string) {
	for {
		time.Sleep(100 * time.Millisecond)
		var total, finished int64
		_ = c.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state IN ('done', 'failed')) FROM geoflow.geoflow_units u
			JOIN geoflow.geoflow_runs r ON r.id = u.run_id WHERE r.flow = $1`, flow).Scan(&total, &finished)
		if total > 0 && finished*3 >= total {
			break
		}
	}
	const held = `SELECT count(*) FROM geoflow.river_job WHERE kind = 'geoflow_unit' AND state = 'running'
		AND attempted_by[array_length(attempted_by, 1)] = $1`
	_ = victim.cmd.Process.Kill()
	killed := time.Now()
	_ = victim.cmd.Wait()
	inflight := scalar[int64](ctx, c, held, victim.id)
	fmt.Printf("- %s SIGKILLed with %d units running\n", victim.id, inflight)
	for scalar[int64](ctx, c, held, victim.id) > 0 && time.Since(killed) < 20*time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("- its units taken back by the pool %.1f s after the kill\n", time.Since(killed).Seconds())
}

// quota compares one process with 3 workers against a quota-limited host.
func quota(o options) error {
	ctx := context.Background()
	c, err := connect(ctx, o.db)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	fmt.Printf("\n## quota: a host allowing %d requests per fixed 1 s window, answers in 300 ms, 5%% 503s; 30000 parcels in pages of 200\n\n", o.quota)
	fmt.Print("| harvest by | requests: server / summary | answered 429: server / summary | 429 share | quota used | units snoozed | exit | features stored / held |\n|---|---:|---:|---:|---:|---:|---|---:|\n")
	for _, mode := range []string{"one process", "3 workers"} {
		s, err := serve(wfsserver.Options{Features: 30000, CountDefault: 200, Seed: 1, ImplementsSorting: true, Latency: 300 * time.Millisecond,
			Quota:  &wfsserver.Quota{Limit: o.quota, Window: time.Second, RetryAfter: true},
			Faults: wfsserver.Faults{Rate5xx: 0.05, Seed: 1}})
		if err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "DELETE FROM geoflow.geoflow_host_pace"); err != nil {
			return err
		}
		table := "quota_" + map[string]string{"one process": "local", "3 workers": "dist"}[mode]
		f, err := o.flow(table, table, s, "")
		if err != nil {
			return err
		}
		var exit string
		if mode == "one process" {
			_, exit, err = o.run(ctx, table, f)
		} else {
			var ws []*worker
			if ws, err = o.startWorkers(3, "quota"); err != nil {
				return err
			}
			time.Sleep(time.Second)
			_, exit, err = o.run(ctx, table, f, "--distributed")
			stopWorkers(ws)
		}
		s.hs.Close()
		if err != nil {
			return err
		}
		cnt := s.cnt
		req, thr, first := cnt.Totals()
		stored := scalar[int64](ctx, c, "SELECT count(*) FROM public."+table)
		snoozed := "-"
		if mode != "one process" {
			snoozed = fmt.Sprint(scalar[int64](ctx, c, "SELECT coalesce(sum(units_snoozed), 0)::bigint FROM geoflow.geoflow_workers WHERE id LIKE 'quota-%'"))
		}
		sumReq, sumThr, err := o.summaryHost(table, s.url)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %d / %s | %d / %s | %.1f%% | %.0f%% | %s | %s | %d / %d |\n", mode, req, sumReq, thr, sumThr,
			100*float64(thr)/float64(max(req, 1)), 100*cnt.Used(first, o.quota), snoozed, exit, stored, s.srv.Len())
	}
	fmt.Println("\nserver: what the server counted; summary: what `geoflow run` printed for the host (its workers' units and its own requests).")
	return nil
}

// summaryLine is a host's line in geoflow run's summary.
var summaryLine = regexp.MustCompile(`(?m)^  host (\S+): (\d+) requests, \d+ retries, (\d+) answered 429`)

// summaryHost reads the requests and 429s the summary of run name printed for the host of
// serverURL ("-" when it printed none).
func (o options) summaryHost(name, serverURL string) (requests, throttled string, err error) {
	out, err := os.ReadFile(filepath.Join(o.dir, name+".run.log"))
	if err != nil {
		return "", "", err
	}
	host := strings.TrimSuffix(serverURL, "/wfs")
	for _, m := range summaryLine.FindAllStringSubmatch(string(out), -1) {
		if m[1] == host {
			return m[2], m[3], nil
		}
	}
	return "-", "-", nil
}

// scale runs one harvest on 1, 2 and 3 workers against a slow server.
func scale(o options) error {
	ctx := context.Background()
	c, err := connect(ctx, o.db)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	fmt.Printf("\n## scale: every request answered in %s; 20000 parcels in pages of 100; rate_limit.concurrency 4 per worker process\n\n", o.latency)
	fmt.Print("| workers | units | seconds | units/s | vs 1 worker | DB transactions per unit | connections (peak, all workers) |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	var base float64
	for n := 1; n <= 3; n++ {
		s, err := serve(wfsserver.Options{Features: 20000, CountDefault: 100, Seed: 1, ImplementsSorting: true, Latency: o.latency})
		if err != nil {
			return err
		}
		table := fmt.Sprintf("scale_%d", n)
		f, err := o.flow(table, table, s, "  rate_limit: {concurrency: 4}\n")
		if err != nil {
			return err
		}
		ws, err := o.startWorkers(n, table)
		if err != nil {
			return err
		}
		time.Sleep(time.Second)
		dbname := scalar[string](ctx, c, "SELECT current_database()")
		x0 := scalar[int64](ctx, c, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", dbname)
		var peak int64
		stopSample := make(chan struct{})
		var sampled sync.WaitGroup
		sampled.Go(func() {
			sc, err := connect(ctx, o.db)
			if err != nil {
				return
			}
			defer sc.Close(ctx)
			for {
				select {
				case <-stopSample:
					return
				case <-time.After(100 * time.Millisecond):
				}
				var n int64
				if sc.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'geoflow'", dbname).Scan(&n) == nil {
					peak = max(peak, n)
				}
			}
		})
		took, exit, err := o.run(ctx, table, f, "--distributed")
		close(stopSample)
		sampled.Wait()
		stopWorkers(ws)
		s.hs.Close()
		if err != nil {
			return err
		}
		if exit != "0" {
			return fmt.Errorf("the run on %d workers exited %s (see %s)", n, exit, o.dir)
		}
		x1 := scalar[int64](ctx, c, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1", dbname)
		runID := scalar[int64](ctx, c, "SELECT max(id) FROM geoflow.geoflow_runs WHERE flow = $1", table)
		units := scalar[int64](ctx, c, "SELECT count(*) FROM geoflow.geoflow_units WHERE run_id = $1", runID)
		rate := float64(units) / took.Seconds()
		if n == 1 {
			base = rate
		}
		fmt.Printf("| %d | %d | %.1f | %.1f | %.2fx | %.1f | %d |\n", n, units, took.Seconds(), rate, rate/base,
			float64(x1-x0)/float64(units), peak)
	}
	return nil
}

// orphan runs a distributed harvest on 3 workers with default flags and SIGKILLs the
// process that started it once a third of the units are done; a worker adopts the run
// and finishes it. Times are the database's: units' and the run's finished_at.
func orphan(o options) error {
	ctx := context.Background()
	s, err := serve(wfsserver.Options{Features: o.features, CountDefault: 1000, Seed: 1, ImplementsSorting: true, Latency: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	defer s.hs.Close()
	c, err := connect(ctx, o.db)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	fmt.Printf("\n## orphan: %d parcels, 3 workers (geoflow worker's default flags), the starting process SIGKILLed mid-run\n\n", o.features)
	f, err := o.flow("orphan_dist", "orphan_dist", s, "")
	if err != nil {
		return err
	}
	ws, err := o.startWorkers(3, "orphan")
	if err != nil {
		return err
	}
	defer stopWorkers(ws)
	time.Sleep(time.Second)
	runID, err := o.startAndKill(ctx, c, f)
	if err != nil {
		return err
	}
	killed := scalar[time.Time](ctx, c, "SELECT clock_timestamp()")
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		st := scalar[string](ctx, c, "SELECT status FROM geoflow.geoflow_runs WHERE id = $1", runID)
		if st != "running" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %d still running 5 minutes after its starting process was killed (see %s)", runID, o.dir)
		}
	}
	var status, by string
	var adopted, ended, last time.Time
	if err := c.QueryRow(ctx, `SELECT status, coalesce(finished_by, '-'), coalesce(adopted_at, 'epoch'), finished_at,
			(SELECT max(finished_at) FROM geoflow.geoflow_units WHERE run_id = r.id) FROM geoflow.geoflow_runs r WHERE id = $1`, runID).
		Scan(&status, &by, &adopted, &ended, &last); err != nil {
		return err
	}
	since := func(t time.Time) float64 { return t.Sub(killed).Seconds() }
	fmt.Printf("- adopted by %s %.1f s after the kill\n", by, since(adopted))
	fmt.Printf("- last unit finished %.1f s after the kill; the run ended %s %.1f s after the kill, %.1f s after its last unit\n",
		since(last), status, since(ended), ended.Sub(last).Seconds())
	stored := scalar[int64](ctx, c, "SELECT count(*) FROM public.orphan_dist")
	distinct := scalar[int64](ctx, c, "SELECT count(DISTINCT gf_feature_id) FROM public.orphan_dist")
	fmt.Printf("- features stored %d, distinct %d, the server holds %d; units completed by worker: %s\n", stored, distinct, s.srv.Len(), spread(ctx, c, runID))
	return nil
}

// startAndKill starts geoflow run --distributed on flow f and SIGKILLs it once a third of
// its units are done; it returns the run's id.
func (o options) startAndKill(ctx context.Context, c *pgx.Conn, f string) (int64, error) {
	logf, err := os.Create(filepath.Join(o.dir, "orphan_dist.run.log"))
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(o.geoflow, "run", "--progress=off", f, "--distributed")
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var runID, total, finished int64
	for total == 0 || finished*3 < total {
		time.Sleep(50 * time.Millisecond)
		_ = c.QueryRow(ctx, `SELECT coalesce(max(r.id), 0), count(u.*), count(u.*) FILTER (WHERE u.state IN ('done', 'failed'))
			FROM geoflow.geoflow_runs r LEFT JOIN geoflow.geoflow_units u ON u.run_id = r.id WHERE r.flow = 'orphan_dist' GROUP BY r.id ORDER BY r.id DESC LIMIT 1`).Scan(&runID, &total, &finished)
		if time.Since(start) > 5*time.Minute {
			return 0, fmt.Errorf("a third of the run's units never ended (see %s)", o.dir)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	open := scalar[int64](ctx, c, "SELECT count(*) FROM geoflow.geoflow_units WHERE run_id = $1 AND state NOT IN ('done', 'failed')", runID)
	fmt.Printf("- the starting process SIGKILLed %.1f s after it started, with %d of %d units open\n", time.Since(start).Seconds(), open, total)
	return runID, nil
}
