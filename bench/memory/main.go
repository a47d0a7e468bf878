// Command memory measures the peak resident memory of a geoflow process harvesting a few
// very large features at once: an OGC API - Features fixture (internal/devserver/bigserver)
// serves 4 features of 4,990,000 vertices (about 110 MB of GeoJSON each, under every
// default per-feature limit), one per quadrant, and the flow's page_size of 1 makes them 4
// units fetched concurrently into PostGIS. The peak RSS is the child process's
// (getrusage). Run:
//
//	go build -o bin/geoflow ./cmd/geoflow
//	bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- go run ./bench/memory -geoflow bin/geoflow
//
// Extra arguments after -- go to geoflow run (--memory-limit 512MiB, say).
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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/internal/devserver/bigserver"
)

func main() {
	geoflow := flag.String("geoflow", "bin/geoflow", "the geoflow binary")
	features := flag.Int("features", 4, "features, one per unit")
	vertices := flag.Int("vertices", 4_990_000, "vertices of each feature")
	logFile := flag.String("log", "", "write geoflow's log to this file")
	flag.Parse()
	if err := run(*geoflow, *features, *vertices, *logFile, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "memory:", err)
		os.Exit(1)
	}
}

func run(geoflow string, features, vertices int, logFile string, extra []string) error {
	db := os.Getenv("GEOFLOW_DATABASE_URL")
	if db == "" {
		return errors.New("GEOFLOW_DATABASE_URL is not set: run it under internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL")
	}
	ctx := context.Background()
	srv := bigserver.New(bigserver.Options{Features: features, Vertices: vertices})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()

	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS public.bench_memory"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "geoflow-bench-memory")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	flow := filepath.Join(dir, "bench_memory.yaml")
	yaml := fmt.Sprintf(`name: bench_memory
tasks:
  big:
    type: ogcapi_features
    url: http://%s/
    collection: %s
    page_size: 1
    target: {table: public.bench_memory, mode: append}
`, ln.Addr(), bigserver.Collection)
	if err := os.WriteFile(flow, []byte(yaml), 0o644); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, geoflow, "migrate", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("geoflow migrate up: %v: %s", err, out)
	}
	args := append([]string{"run", flow, "--progress=off"}, extra...)
	cmd := exec.CommandContext(ctx, geoflow, args...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	t0 := time.Now()
	err = cmd.Run()
	elapsed := time.Since(t0)
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		return err
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if logFile != "" {
		if err := os.WriteFile(logFile, []byte(log.String()), 0o644); err != nil {
			return err
		}
	}
	var stored, points int64
	if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(ST_NPoints(geom)), 0) FROM public.bench_memory").Scan(&stored, &points); err != nil {
		stored, points = -1, -1
	}
	if exit != 0 && exit != 2 {
		fmt.Fprintln(os.Stderr, log.String())
	}
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "memory") || strings.Contains(l, "too_large") {
			fmt.Fprintln(os.Stderr, l)
		}
	}
	fmt.Printf("| %d x %d vertices (%d MB of GeoJSON) | %s | exit %d | %d of %d stored (%d vertices) | peak RSS %d MiB | %.1f s |\n",
		features, vertices, srv.Bytes.Load()/1e6, strings.Join(extra, " "), exit, stored, features, points, ru.Maxrss/1024, elapsed.Seconds())
	return nil
}
