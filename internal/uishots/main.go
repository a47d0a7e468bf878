// Command uishots takes the screenshots of the web UI in docs/screenshots (make
// screenshots) and measures what a page costs: bytes sent on a first visit and on the
// pages after it, and the time from navigation to the map's first draw of its boxes.
//
// It needs $GEOFLOW_DATABASE_URL (a PostGIS database it may write to; make screenshots
// starts a throwaway one) and Chromium. It starts a sample WFS that is slow and fails for
// good over one area, runs the parcels flow through the UI's launcher, and photographs
// the run's page while the run goes (units done, running, pending and dead), then the
// dead-letter page, the overview, the runs and the flow.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/chromedp/chromedp"
	"github.com/paulmach/orb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/browser"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/schedule"
	"github.com/geoflow/geoflow/server"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/tiles"
	"github.com/geoflow/geoflow/tasks/wfs"
)

func main() {
	out := flag.String("out", "docs/screenshots", "directory for the PNG files")
	features := flag.Int("features", 20000, "parcels the sample WFS serves")
	flag.Parse()
	if err := run(*out, *features); err != nil {
		fmt.Fprintln(os.Stderr, "uishots:", err)
		os.Exit(1)
	}
}

// counter counts the bytes the UI sends, for page weight.
type counter struct {
	h     http.Handler
	bytes atomic.Int64
	reqs  atomic.Int64
}

type countingWriter struct {
	http.ResponseWriter
	c *counter
}

func (w countingWriter) Write(p []byte) (int, error) {
	w.c.bytes.Add(int64(len(p)))
	return w.ResponseWriter.Write(p)
}

func (w countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.reqs.Add(1)
	c.h.ServeHTTP(countingWriter{w, c}, r)
}

func run(out string, features int) error {
	ctx := context.Background()
	dbURL := os.Getenv("GEOFLOW_DATABASE_URL")
	if dbURL == "" {
		return fmt.Errorf("set GEOFLOW_DATABASE_URL (make screenshots starts a throwaway PostGIS)")
	}
	db, err := postgis.Open(ctx, dbURL, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		return err
	}

	// Tiles that touch the broken area fail for good: their units die.
	broken := orb.Bound{Min: orb.Point{11.515, 48.062}, Max: orb.Point{11.53, 48.078}}
	fx := wfsserver.New(wfsserver.Options{Features: features, CountDefault: 250, ImplementsSorting: true, Latency: 250 * time.Millisecond,
		Faults: wfsserver.Faults{FailForever: func(r *http.Request) bool {
			b, ok := wfsserver.RequestBBox(r)
			return ok && b.Max[0]-b.Min[0] < 0.05 && b.Intersects(broken)
		}}})
	wfsSrv := httptest.NewServer(fx)
	defer wfsSrv.Close()
	tileSrv := httptest.NewServer(tileserver.New(tileserver.Options{}))
	defer tileSrv.Close()

	dir, err := os.MkdirTemp("", "geoflow-uishots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	flow := `# Parcels from the sample WFS; make screenshots points it at a slow, partly broken one.
name: parcels
schedule: "0 2 * * *"
defaults:
  retry: {max_attempts: 2, base_delay: 50ms, max_delay: 200ms}
  rate_limit: {concurrency: 3}
tasks:
  parcels:
    type: wfs
    url: ` + wfsSrv.URL + `/wfs
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: public.parcels, mode: append}
  basemap:
    type: tiles
    depends_on: [parcels]
    url: ` + tileserver.TileURL(tileSrv.URL) + `
    bbox_from: parcels
    zoom: [11, 13]
    target: {dir: ` + filepath.Join(dir, "tiles") + `, table: public.basemap}
`
	if err := os.WriteFile(filepath.Join(dir, "parcels.yaml"), []byte(flow), 0o644); err != nil {
		return err
	}
	// A mirror with history of another server, whose second revision edits, deletes and
	// adds parcels: its second run's page shows those changes.
	changes := wfsserver.Changes{Edited: 60, Deleted: 25, Added: 30}
	mfx := wfsserver.New(wfsserver.Options{Features: 2000, Seed: 7, CountDefault: 500, ImplementsSorting: true, Changes: changes,
		Extent: orb.Bound{Min: orb.Point{11.56, 48.1}, Max: orb.Point{11.6, 48.13}}})
	mSrv := httptest.NewServer(mfx)
	defer mSrv.Close()
	mirror := `# Land use, mirrored with every version kept.
name: landuse
tasks:
  landuse:
    type: wfs
    url: ` + mSrv.URL + `/wfs
    typename: gf:parcels
    bbox: [11.56, 48.1, 11.6, 48.13]
    target: {table: public.landuse, mode: mirror, history: true}
`
	if err := os.WriteFile(filepath.Join(dir, "landuse.yaml"), []byte(mirror), 0o644); err != nil {
		return err
	}
	reg := &tasks.Registry{}
	reg.Register(wfs.Kind())
	reg.Register(tiles.Kind())
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	catalog := &server.Catalog{Dir: dir, Options: flows.Options{Registry: reg}}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ropts := engine.RunOptions{Store: testflow.Stores(db), HTTP: retry.New(&retry.Options{Logger: log}), Logger: log, Grace: 5 * time.Second}
	launcher, err := server.NewLauncher(runCtx, catalog, ropts, engine.ReplayOptions{Store: testflow.Stores(db), HTTP: ropts.HTTP, Registry: reg, Logger: log})
	if err != nil {
		return err
	}
	h, err := server.Handler(server.Options{Store: db, Flows: noFlows{}, Registry: prometheus.NewRegistry(), Logger: log,
		Catalog: catalog, Launcher: launcher, StoreName: "PostGIS (make screenshots)", Basemap: tileserver.TileURL(tileSrv.URL)})
	if err != nil {
		return err
	}
	cnt := &counter{h: h}
	ui := httptest.NewServer(cnt)
	defer ui.Close()

	bctx, stop, err := browser.Start(ctx, &browser.Options{Width: 1440, Height: 900})
	if err != nil {
		return err
	}
	defer stop()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	// A first, finished run so that the overview has a history.
	first, err := launcher.StartRun(ctx, "parcels", flows.Scope{BBox: "11.45,48.05,11.5,48.1"})
	if err != nil {
		return err
	}
	if err := waitRun(ctx, db, first, func(store.RunRecord) bool { return false }); err != nil {
		return err
	}
	// The run photographed while it goes.
	id, err := launcher.StartRun(ctx, "parcels", flows.Scope{})
	if err != nil {
		return err
	}
	var m []measure
	cnt.bytes.Store(0)
	cnt.reqs.Store(0)
	if err := waitRun(ctx, db, id, func(r store.RunRecord) bool {
		return r.UnitsDead > 0 && r.UnitsTotal > 20 && r.UnitsDone*10 >= r.UnitsTotal*4
	}); err != nil {
		return err
	}
	mm, err := shoot(bctx, cnt, fmt.Sprintf("%s/runs/%d", ui.URL, id), "run-map", filepath.Join(out, "run-map.png"), true)
	if err != nil {
		return err
	}
	m = append(m, mm)
	if err := waitRun(ctx, db, id, func(store.RunRecord) bool { return false }); err != nil {
		return err
	}
	mirrorRun, err := mirrorRuns(ctx, launcher, db, mfx, changes)
	if err != nil {
		return err
	}
	pages := []struct{ path, mapID, file string }{
		{"/tables", "", "tables.png"},
		{"/tables/parcels", "table-map", "table.png"},
		{"/tables/landuse", "table-map", "table-history.png"},
		{fmt.Sprintf("/runs/%d", mirrorRun), "run-map", "run-changes.png"},
		{"/dlq?status=open", "dlq-map", "dlq-map.png"},
		{"/", "", "overview.png"},
		{"/runs", "", "runs.png"},
		{"/flows/parcels", "flow-map", "flow.png"},
		{fmt.Sprintf("/runs/%d", id), "run-map", "run-done.png"},
	}
	for _, p := range pages {
		mm, err := shoot(bctx, cnt, ui.URL+p.path, p.mapID, filepath.Join(out, p.file), false)
		if err != nil {
			return err
		}
		m = append(m, mm)
	}
	sum, err := db.GetRun(ctx, id)
	if err != nil {
		return err
	}
	fmt.Printf("run %d: %d units (%d dead), %d features inserted\n\n", id, sum.UnitsTotal, sum.UnitsDead, sum.FeaturesInserted)
	fmt.Println("| page | visit | requests | bytes sent | map boxes | first map draw |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, x := range m {
		draw := "no map"
		if x.mapID != "" {
			draw = x.drawnMs + " ms"
		}
		visit := "later (cached assets)"
		if x.cold {
			visit = "first (empty cache)"
		}
		fmt.Printf("| %s | %s | %d | %s | %s | %s |\n", x.path, visit, x.reqs, kb(x.bytes), x.boxes, draw)
	}
	return nil
}

// mirrorRuns runs the landuse mirror twice, the server's revision changed between, and
// returns the second run.
func mirrorRuns(ctx context.Context, launcher *server.Launcher, db *postgis.Store, fx *wfsserver.Server, c wfsserver.Changes) (int64, error) {
	var id int64
	for rev := range 2 {
		if err := fx.SetRevision(rev, c); err != nil {
			return 0, err
		}
		var err error
		if id, err = launcher.StartRun(ctx, "landuse", flows.Scope{}); err != nil {
			return 0, err
		}
		if err := waitRun(ctx, db, id, func(store.RunRecord) bool { return false }); err != nil {
			return 0, err
		}
	}
	return id, nil
}

type measure struct {
	path, mapID, drawnMs, boxes string
	bytes, reqs                 int64
	cold                        bool
}

func kb(n int64) string { return fmt.Sprintf("%.1f KB", float64(n)/1024) }

// shoot opens url, waits for its map (when it has one) to draw, saves a screenshot to
// file, and reports what the visit cost.
func shoot(ctx context.Context, cnt *counter, url, mapID, file string, cold bool) (measure, error) {
	cnt.bytes.Store(0)
	cnt.reqs.Store(0)
	x := measure{path: url, mapID: mapID, cold: cold}
	if u, err := neturl.Parse(url); err == nil {
		x.path = u.RequestURI()
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return x, err
	}
	if mapID != "" {
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.getElementById(%q).dataset.ready === '1'`, mapID),
			chromedp.WithPollingTimeout(60*time.Second))); err != nil {
			return x, fmt.Errorf("%s: the map did not draw: %w", url, err)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[document.getElementById(%q).dataset.drawnMs, document.getElementById(%q).dataset.features]`, mapID, mapID)))
		if err != nil {
			return x, err
		}
		x.drawnMs, x.boxes = v[0], v[1]
	}
	// Let late requests (the worker, polling) settle into the count, then photograph.
	time.Sleep(700 * time.Millisecond)
	x.bytes, x.reqs = cnt.bytes.Load(), cnt.reqs.Load()
	if mapID == "table-map" {
		if err := clickFeature(ctx); err != nil {
			return x, fmt.Errorf("%s: %w", url, err)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return x, err
	}
	return x, os.WriteFile(file, png, 0o644)
}

// clickFeature closes in on the middle of a table's map and clicks the feature there,
// so that the photograph shows its attributes and versions in the panel.
func clickFeature(ctx context.Context) error {
	const m = `geoflow.maps['table-map'].map`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](m+`.jumpTo({center: `+m+`.getCenter(), zoom: 16}), null`)); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the tiles of the new view are asked for on the next frames
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](m+`.loaded() && `+m+`.areTilesLoaded()`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		return fmt.Errorf("the closer map did not draw: %w", err)
	}
	// The feature nearest the middle is "clicked" through the map's own handler (a real
	// click is what TestBrowserTableFeature drives; here only the picture matters).
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const tm = geoflow.maps['table-map'], m = tm.map;
		const mid = (f) => { const pts = []; const walk = (c) => typeof c[0] === 'number' ? pts.push(c) : c.forEach(walk); walk(f.geometry.coordinates);
			return [pts.reduce((a, q) => a + q[0], 0) / pts.length, pts.reduce((a, q) => a + q[1], 0) / pts.length]; };
		const c = m.project(m.getCenter());
		let best = null, d = Infinity;
		for (const f of m.queryRenderedFeatures({layers: ['table-fill']})) {
			const p = m.project(mid(f)), dd = Math.hypot(p.x - c.x, p.y - c.y);
			if (dd < d) { d = dd; best = f; }
		}
		if (!best) return false;
		tm.clicked({features: [best], originalEvent: {}});
		return true; })()`))
	if err != nil || !ok {
		return fmt.Errorf("no feature to click (%v)", err)
	}
	if _, err = chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById('feature').hidden && !document.querySelector('#feature .versions').textContent.startsWith('loading')`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		return fmt.Errorf("no feature's panel: %w", err)
	}
	return nil
}

// waitRun waits until run id ends or until while says so.
func waitRun(ctx context.Context, db *postgis.Store, id int64, until func(store.RunRecord) bool) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		r, err := db.GetRun(ctx, id)
		if err != nil {
			return err
		}
		if r.Status != store.Running || until(r) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("run %d: still going after 5 minutes", id)
}

type noFlows struct{}

func (noFlows) Flows(int) []schedule.FlowInfo { return nil }
