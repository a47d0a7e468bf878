// Command tiles measures how fast geoflow mirrors map tiles (one committed unit per tile:
// files written atomically with rows in PostGIS or a GeoPackage, or the tiles themselves
// in a GeoPackage tile pyramid) against the raw limit of the same server:
// one curl process fetching the same URLs with --parallel at the same concurrency. The
// tile server (internal/tilefixture) listens on 127.0.0.1 only; the database is
// $GEOFLOW_DATABASE_URL.
//
//	bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- go run ./bench/tiles
//	go run ./bench/tiles -tiles 10000 -concurrency 8 -latency 2ms
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/tiles"
)

func main() {
	n := flag.Int("tiles", 10000, "tiles to fetch (a square of zoom-16 tiles)")
	conc := flag.Int("concurrency", 8, "requests in flight, for curl and geoflow alike")
	latency := flag.Duration("latency", 0, "server latency per request")
	db := flag.String("database", os.Getenv("GEOFLOW_DATABASE_URL"), "PostGIS URL (the PostGIS row is skipped without one)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*n, *conc, *latency, *db); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tiles:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, conc int, latency time.Duration, db string) error {
	ctx := context.Background()
	side := int(math.Ceil(math.Sqrt(float64(n))))
	const z, x0, y0 = 16, 34800, 22700
	fx := tileserver.New(tileserver.Options{Latency: latency})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: fx}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	work, err := os.MkdirTemp("", "bench-tiles-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	// Warm the server's tile cache so both clients see the same server.
	var urls []string
	for x := x0; x < x0+side; x++ {
		for y := y0; y < y0+side; y++ {
			urls = append(urls, fmt.Sprintf("%s/%d/%d/%d.png", base, z, x, y))
		}
	}
	for _, u := range urls {
		if resp, err := http.Get(u); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	fmt.Printf("tiles: %d small PNG tiles (%dx%d at z%d), concurrency %d, server latency %s, %d CPUs\n",
		len(urls), side, side, z, conc, latency, runtimeCPUs())

	// curl: one process, --parallel, a config file of url/output pairs.
	cfg := filepath.Join(work, "curl.cfg")
	var b strings.Builder
	for i, u := range urls {
		fmt.Fprintf(&b, "url = \"%s\"\noutput = \"%s\"\n", u, filepath.Join(work, "curl", fmt.Sprintf("%d.png", i)))
	}
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fx.ResetStats()
	start := time.Now()
	cmd := exec.Command("curl", "--parallel", "--parallel-max", fmt.Sprint(conc), "--create-dirs", "-s", "-f", "-K", cfg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("curl: %w", err)
	}
	curlTime := time.Since(start)
	if st := fx.Stats(); st.OK != int64(len(urls)) {
		return fmt.Errorf("curl fetched %d of %d tiles", st.OK, len(urls))
	}

	rate := func(d time.Duration) float64 { return float64(len(urls)) / d.Seconds() }
	fmt.Printf("%-40s %8.0f tiles/s  (%s)\n", "curl --parallel", rate(curlTime), curlTime.Round(time.Millisecond))

	// geoflow: the same tiles as a one-level tiles task, into each store.
	targets := []struct {
		name, storage string
		open          func() (store.Store, error)
	}{
		{"PostGIS, files", "files", func() (store.Store, error) { return postgis.Open(ctx, db, nil) }},
		{"GeoPackage, files", "files", func() (store.Store, error) { return gpkg.Open(ctx, filepath.Join(work, "files.gpkg"), nil) }},
		{"GeoPackage, tiles in the file", "geopackage", func() (store.Store, error) { return gpkg.Open(ctx, filepath.Join(work, "pyramid.gpkg"), nil) }},
	}
	tb := tileCentreBound(z, x0, y0, side)
	for i, tg := range targets {
		if db == "" && i == 0 {
			fmt.Printf("%-40s (no -database: skipped)\n", "geoflow first run, "+tg.name)
			continue
		}
		st, err := tg.open()
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := st.Migrate(ctx); err != nil {
			return err
		}
		table := fmt.Sprintf("bench_tiles_%d", time.Now().UnixNano())
		target := fmt.Sprintf("{dir: %s, table: public.%s}", filepath.Join(work, fmt.Sprint("geoflow", i)), table)
		if tg.storage == "geopackage" {
			target = fmt.Sprintf("{storage: geopackage, table: %s}", table)
		}
		src := fmt.Sprintf(`name: bench_tiles
tasks:
  tiles:
    type: tiles
    url: %s/{z}/{x}/{y}.png
    bbox: [%.10f, %.10f, %.10f, %.10f]
    zoom: [%d, %d]
    rate_limit: {concurrency: %d}
    target: %s
`, base, tb[0], tb[1], tb[2], tb[3], z, z, conc, target)
		reg := &tasks.Registry{}
		reg.Register(tiles.Kind())
		f, err := flows.Parse(filepath.Join(work, "bench.yaml"), []byte(src), flows.Options{Registry: reg})
		if err != nil {
			return err
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		measure := func() (time.Duration, *flows.Result, error) {
			fx.ResetStats()
			start := time.Now()
			res, err := flows.Run(ctx, f, flows.RunOptions{Store: st, Logger: log, HTTP: retry.New(&retry.Options{Logger: log})})
			return time.Since(start), res, err
		}
		gfTime, res, err := measure()
		if err != nil {
			return err
		}
		if stats := fx.Stats(); res.Summary.Inserted != int64(len(urls)) || stats.OK != int64(len(urls)) {
			return fmt.Errorf("%s: geoflow stored %d of %d tiles (%d fetched)", tg.name, res.Summary.Inserted, len(urls), stats.OK)
		}
		reTime, _, err := measure()
		if err != nil {
			return err
		}
		if stats := fx.Stats(); stats.NotModified != int64(len(urls)) || stats.OK != 0 {
			return fmt.Errorf("%s: rerun: %d 304s, %d 200s", tg.name, stats.NotModified, stats.OK)
		}
		fmt.Printf("%-40s %8.0f tiles/s  (%s)  %.2fx curl\n", "geoflow first run, "+tg.name, rate(gfTime), gfTime.Round(time.Millisecond), rate(gfTime)/rate(curlTime))
		fmt.Printf("%-40s %8.0f tiles/s  (%s)  %.2fx curl\n", "geoflow rerun (304s), "+tg.name, rate(reTime), reTime.Round(time.Millisecond), rate(reTime)/rate(curlTime))
	}
	return nil
}

// tileCentreBound is the lon/lat box from the centre of tile (x0, y0+side-1) to the
// centre of (x0+side-1, y0): its cover at z is exactly the side x side square.
func tileCentreBound(z, x0, y0, side int) [4]float64 {
	nz := math.Exp2(float64(z))
	lon := func(x float64) float64 { return x/nz*360 - 180 }
	lat := func(y float64) float64 { return math.Atan(math.Sinh(math.Pi*(1-2*y/nz))) * 180 / math.Pi }
	return [4]float64{lon(float64(x0) + 0.5), lat(float64(y0+side-1) + 0.5), lon(float64(x0+side-1) + 0.5), lat(float64(y0) + 0.5)}
}

func runtimeCPUs() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 0
	}
	var n int
	fmt.Sscan(strings.TrimSpace(string(out)), &n)
	return n
}
