// Command tiles measures how fast geoflow mirrors map tiles (units of up to 256 tiles,
// each committed with its rows: files written atomically and indexed in PostGIS or a
// GeoPackage, or the tiles themselves in a GeoPackage tile pyramid) against the raw limit
// of the same server: one curl process fetching the same URLs with --parallel at the
// same concurrency into the same z/x/y.png layout. The tile server (internal/devserver/tileserver)
// listens on 127.0.0.1 only, in this process; the database is $GEOFLOW_DATABASE_URL. It
// runs several rounds of curl then each target and reports medians, since the speed of a
// shared machine drifts between runs.
//
//	bash internal/testdb/postgis.sh run --env GEOFLOW_DATABASE_URL -- go run ./bench/tiles
//	go run ./bench/tiles -tiles 10000 -concurrency 8 -latency 2ms -rounds 3 -dir /dev/shm
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
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
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
	profile := flag.String("cpuprofile", "", "write a CPU profile of the measured runs (not the server's warm-up) to this file")
	rounds := flag.Int("rounds", 5, "rounds of curl then geoflow; medians are reported")
	dir := flag.String("dir", "", "where both clients write their tiles and GeoPackages (default: the system's temporary directory; /dev/shm takes the disk out of the comparison)")
	only := flag.String("targets", "postgis,gpkg,pyramid", "targets to measure, of postgis, gpkg (files indexed in a GeoPackage), pyramid")
	flag.Parse()
	if err := run(*n, *conc, *rounds, *latency, *db, *dir, *profile, strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tiles:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, conc, rounds int, latency time.Duration, db, dir, profile string, only []string) error {
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
	work, err := os.MkdirTemp(dir, "bench-tiles-")
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
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("tiles: %d small PNG tiles (%dx%d at z%d), concurrency %d, server latency %s, %d CPUs, files under %s\n",
		len(urls), side, side, z, conc, latency, runtimeCPUs(), work)

	// curl: one process, --parallel, a config file of url/output pairs writing the same
	// layout geoflow writes (dir/z/x/y.png), into a new directory each round.
	curl := func(round int) (time.Duration, error) {
		dir := filepath.Join(work, fmt.Sprint("curl", round))
		cfg := filepath.Join(work, fmt.Sprint("curl", round, ".cfg"))
		var b strings.Builder
		for x := x0; x < x0+side; x++ {
			for y := y0; y < y0+side; y++ {
				fmt.Fprintf(&b, "url = \"%s/%d/%d/%d.png\"\noutput = \"%s\"\n", base, z, x, y, filepath.Join(dir, fmt.Sprint(z), fmt.Sprint(x), fmt.Sprint(y)+".png"))
			}
		}
		if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
			return 0, err
		}
		settle()
		fx.ResetStats()
		start := time.Now()
		cmd := exec.Command("curl", "--parallel", "--parallel-max", fmt.Sprint(conc), "--create-dirs", "--no-progress-meter", "-f", "-K", cfg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("curl: %w", err)
		}
		d := time.Since(start)
		if st := fx.Stats(); st.OK != int64(len(urls)) {
			return 0, fmt.Errorf("curl fetched %d of %d tiles", st.OK, len(urls))
		}
		return d, nil
	}

	// geoflow: the same tiles as a one-level tiles task, into each store.
	type target struct {
		id, name, storage string
		open              func() (store.Store, error)
	}
	var targets []target
	for _, tg := range []target{
		{"postgis", "PostGIS, files", "files", func() (store.Store, error) { return postgis.Open(ctx, db, nil) }},
		{"gpkg", "GeoPackage, files", "files", func() (store.Store, error) { return gpkg.Open(ctx, filepath.Join(work, "files.gpkg"), nil) }},
		{"pyramid", "GeoPackage, tiles in the file", "geopackage", func() (store.Store, error) { return gpkg.Open(ctx, filepath.Join(work, "pyramid.gpkg"), nil) }},
	} {
		switch {
		case !slices.Contains(only, tg.id):
		case tg.id == "postgis" && db == "":
			fmt.Println("(no -database: the PostGIS target is skipped)")
		default:
			targets = append(targets, tg)
		}
	}
	stores := make([]store.Store, len(targets))
	for i, tg := range targets {
		st, err := tg.open()
		if err != nil {
			return err
		}
		defer st.Close()
		if _, err := st.Migrate(ctx); err != nil {
			return err
		}
		stores[i] = st
	}
	tb := tileCentreBound(z, x0, y0, side)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// geoflow mirrors the square into a new table (and directory) of target i, then runs
	// again over it: a first run and a rerun of 304s.
	geoflow := func(i, round int) (first, rerun time.Duration, err error) {
		tg := targets[i]
		table := fmt.Sprintf("bench_tiles_%d_%d", round, time.Now().UnixNano())
		target := fmt.Sprintf("{dir: %s, table: public.%s}", filepath.Join(work, fmt.Sprint("geoflow", i, "_", round)), table)
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
			return 0, 0, err
		}
		measure := func() (time.Duration, *engine.Result, error) {
			settle()
			fx.ResetStats()
			start := time.Now()
			res, err := engine.Run(ctx, f, engine.RunOptions{Store: testflow.Stores(stores[i]), Logger: log, HTTP: retry.New(&retry.Options{Logger: log})})
			return time.Since(start), res, err
		}
		first, res, err := measure()
		if err != nil {
			return 0, 0, err
		}
		if stats := fx.Stats(); res.Summary.Inserted != int64(len(urls)) || stats.OK != int64(len(urls)) {
			return 0, 0, fmt.Errorf("%s: geoflow stored %d of %d tiles (%d fetched)", tg.name, res.Summary.Inserted, len(urls), stats.OK)
		}
		rerun, _, err = measure()
		if err != nil {
			return 0, 0, err
		}
		if stats := fx.Stats(); stats.NotModified != int64(len(urls)) || stats.OK != 0 {
			return 0, 0, fmt.Errorf("%s: rerun: %d 304s, %d 200s", tg.name, stats.NotModified, stats.OK)
		}
		return first, rerun, nil
	}

	// Rounds: curl, then each target, so that every ratio compares runs a few seconds
	// apart on a machine whose speed drifts; the medians of the rounds are reported.
	rate := func(d time.Duration) float64 { return float64(len(urls)) / d.Seconds() }
	var curlRates []float64
	firstRatios := make([][]float64, len(targets))
	rerunRatios := make([][]float64, len(targets))
	firstRates := make([][]float64, len(targets))
	rerunRates := make([][]float64, len(targets))
	for round := range rounds {
		d, err := curl(round)
		if err != nil {
			return err
		}
		c := rate(d)
		curlRates = append(curlRates, c)
		line := fmt.Sprintf("round %d: curl %.0f tiles/s", round+1, c)
		for i := range targets {
			first, rerun, err := geoflow(i, round)
			if err != nil {
				return err
			}
			firstRates[i] = append(firstRates[i], rate(first))
			rerunRates[i] = append(rerunRates[i], rate(rerun))
			firstRatios[i] = append(firstRatios[i], rate(first)/c)
			rerunRatios[i] = append(rerunRatios[i], rate(rerun)/c)
			line += fmt.Sprintf("; %s %.2fx (rerun %.2fx)", targets[i].name, rate(first)/c, rate(rerun)/c)
		}
		fmt.Println(line)
	}
	fmt.Printf("\nmedians of %d rounds:\n", rounds)
	fmt.Printf("%-46s %8.0f tiles/s\n", "curl --parallel", median(curlRates))
	for i, tg := range targets {
		fmt.Printf("%-46s %8.0f tiles/s  %.2fx curl (rounds: %s)\n", "geoflow first run, "+tg.name, median(firstRates[i]), median(firstRatios[i]), list(firstRatios[i]))
		fmt.Printf("%-46s %8.0f tiles/s  %.2fx curl (rounds: %s)\n", "geoflow rerun (304s), "+tg.name, median(rerunRates[i]), median(rerunRatios[i]), list(rerunRatios[i]))
	}
	return nil
}

// settle flushes what earlier runs left dirty in the page cache, outside the timings, so
// that no client pays for the writeback of files another one wrote: on this machine a
// file created while 20,000 others wait to be written back costs several times more.
func settle() {
	syscall.Sync()
	runtime.GC()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func list(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, " ")
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
