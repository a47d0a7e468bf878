// Command sharedquota measures several geoflow processes harvesting one quota-limited
// WFS at once, each a part of the same area, into one PostgreSQL: the requests answered
// 429, the quota used, the features stored, with the pacing shared through the database
// (rate_limit.shared, the default) and, for comparison, each process pacing alone. With
// -kill one process is SIGKILLed mid-run: the others must take up the quota it leaves.
//
//	go build -o bin/geoflow ./cmd/geoflow
//	bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- go run ./bench/sharedquota -geoflow bin/geoflow
//
// The server is the sample WFS (internal/devserver/wfsserver) with a quota of -quota
// requests per fixed one-second window, X-RateLimit-Limit/Remaining/Reset (Reset in whole
// epoch seconds) and Retry-After on a 429, answers of -latency and 5% 503s. Quota used is
// the requests admitted over the quota of the time from the first request to the last
// admitted one.
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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/bench/internal/admits"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

type options struct {
	geoflow   string
	procs     int
	features  int
	quota     int
	latency   time.Duration
	faults    float64
	kill      time.Duration
	modes     string
	timeout   time.Duration
	workspace string
}

func main() {
	var o options
	flag.StringVar(&o.geoflow, "geoflow", "bin/geoflow", "the geoflow binary")
	flag.IntVar(&o.procs, "processes", 3, "geoflow processes, each harvesting a strip of the area")
	flag.IntVar(&o.features, "features", 60000, "parcels the server holds")
	flag.IntVar(&o.quota, "quota", 5, "requests per fixed one-second window")
	flag.DurationVar(&o.latency, "latency", 300*time.Millisecond, "the server's time to answer an admitted request")
	flag.Float64Var(&o.faults, "faults", 0.05, "share of requests answered 503")
	flag.DurationVar(&o.kill, "kill", 0, "SIGKILL the last process this long after the start (0: none)")
	flag.StringVar(&o.modes, "modes", "alone,shared", "comma-separated: alone (rate_limit.shared: false), shared")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a run after this long")
	flag.Parse()
	db := os.Getenv("GEOFLOW_DATABASE_URL")
	if db == "" {
		fmt.Fprintln(os.Stderr, "sharedquota: GEOFLOW_DATABASE_URL is not set: run it under internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "geoflow-sharedquota")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	o.workspace = dir
	fmt.Printf("%d geoflow processes, %d parcels in %d strips, quota %d req/s in fixed 1 s windows, answers in %s, %.0f%% 503s",
		o.procs, o.features, o.procs, o.quota, o.latency, o.faults*100)
	if o.kill > 0 {
		fmt.Printf(", the last process SIGKILLed after %s", o.kill)
	}
	fmt.Print("\n\n| pacing | requests | answered 429 | 429 share | quota used | quota used after the kill | exits | features stored / in the area | duplicates |\n|---|---:|---:|---:|---:|---:|---|---:|---:|\n")
	for _, mode := range strings.Split(o.modes, ",") {
		r, err := runMode(context.Background(), o, db, strings.TrimSpace(mode))
		if err != nil {
			fmt.Fprintln(os.Stderr, "sharedquota:", err)
			os.Exit(1)
		}
		after := "-"
		if o.kill > 0 {
			after = fmt.Sprintf("%.0f%%", r.usedAfterKill*100)
		}
		fmt.Printf("| %s | %d | %d | %.1f%% | %.0f%% | %s | %s | %d / %d | %d |\n", mode, r.requests, r.throttled,
			100*float64(r.throttled)/float64(max(r.requests, 1)), r.used*100, after, strings.Join(r.exits, " "), r.stored, r.want, r.dups)
	}
}

type result struct {
	requests, throttled int
	used, usedAfterKill float64
	exits               []string
	stored, want, dups  int
}

func runMode(ctx context.Context, o options, db, mode string) (result, error) {
	if mode != "alone" && mode != "shared" {
		return result{}, fmt.Errorf("-modes: %q is neither alone nor shared", mode)
	}
	srv := wfsserver.New(wfsserver.Options{Features: o.features, Latency: o.latency, Seed: 1,
		Quota:  &wfsserver.Quota{Limit: o.quota, Window: time.Second, RetryAfter: true},
		Faults: wfsserver.Faults{Rate5xx: o.faults, Seed: 1}})
	cnt := &admits.Counter{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	hs := &http.Server{Handler: cnt.Wrap(srv)}
	go hs.Serve(ln)
	defer hs.Close()

	table := "sharedquota_" + mode
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return result{}, err
	}
	defer conn.Close(ctx)
	// Start clean: the table, the host's shared schedule and earlier runs of the flow.
	for _, q := range []string{"DROP TABLE IF EXISTS public." + table, "DELETE FROM geoflow.geoflow_host_pace"} {
		if _, err := conn.Exec(ctx, q); err != nil && !strings.Contains(err.Error(), "does not exist") {
			return result{}, fmt.Errorf("%s: %w", q, err)
		}
	}
	flow := filepath.Join(o.workspace, table+".yaml")
	shared := map[string]string{"alone": "false", "shared": "true"}[mode]
	yaml := fmt.Sprintf(`name: %s
defaults:
  retry: {max_attempts: 8, base_delay: 500ms, max_delay: 30s}
  rate_limit: {shared: %s}
tasks:
  parcels:
    type: wfs
    url: http://%s/wfs
    typename: %s
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: public.%s, mode: append}
`, table, shared, ln.Addr(), srv.TypeName(), table)
	if err := os.WriteFile(flow, []byte(yaml), 0o644); err != nil {
		return result{}, err
	}
	if out, err := exec.CommandContext(ctx, o.geoflow, "migrate", "up").CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("geoflow migrate up: %v: %s", err, out)
	}

	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cmds := make([]*exec.Cmd, o.procs)
	exits := make([]string, o.procs)
	var wg sync.WaitGroup
	w := (11.55 - 11.45) / float64(o.procs)
	for i := range o.procs {
		bbox := fmt.Sprintf("%.6f,48.05,%.6f,48.15", 11.45+float64(i)*w, 11.45+float64(i+1)*w)
		cmd := exec.CommandContext(ctx, o.geoflow, "run", flow, "--bbox", bbox, "--progress=off")
		logf, err := os.Create(filepath.Join(o.workspace, fmt.Sprintf("%s-%d.log", table, i)))
		if err != nil {
			return result{}, err
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return result{}, err
		}
		cmds[i] = cmd
		wg.Go(func() {
			err := cmd.Wait()
			var ee *exec.ExitError
			switch {
			case err == nil:
				exits[i] = "0"
			case errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled():
				exits[i] = "killed"
			case errors.As(err, &ee):
				exits[i] = fmt.Sprint(ee.ExitCode())
			default:
				exits[i] = err.Error()
			}
		})
	}
	var killedAt time.Time
	if o.kill > 0 {
		select {
		case <-time.After(o.kill):
			killedAt = time.Now()
			_ = cmds[o.procs-1].Process.Kill()
		case <-ctx.Done():
		}
	}
	wg.Wait()
	r := result{exits: exits}
	var first time.Time
	r.requests, r.throttled, first = cnt.Totals()
	r.used = cnt.Used(first, o.quota)
	if !killedAt.IsZero() {
		r.usedAfterKill = cnt.Used(killedAt, o.quota)
	}
	err = conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*), count(*) - count(DISTINCT gf_feature_id) FROM public.%s", table)).Scan(&r.stored, &r.dups)
	if err != nil {
		return result{}, fmt.Errorf("counting the stored features: %w", err)
	}
	r.want = srv.Len() // the strips cover the server's whole extent
	return r, nil
}
