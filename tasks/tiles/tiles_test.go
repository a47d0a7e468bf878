package tiles_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/tileserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
	"github.com/geoflow/geoflow/tasks/tiles"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// harness is one tile server, one database, one tile directory.
type harness struct {
	t     *testing.T
	fx    *tileserver.Server
	srv   *httptest.Server
	dbURL string
	db    *postgis.Store
	dir   string
	logs  *bytes.Buffer
}

func newHarness(t *testing.T, opts tileserver.Options) *harness {
	t.Helper()
	fx := tileserver.New(opts)
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	dbURL := testdb.URL(t)
	db, err := postgis.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &harness{t: t, fx: fx, srv: srv, dbURL: dbURL, db: db, dir: t.TempDir(), logs: &bytes.Buffer{}}
}

func registry() *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(tiles.Kind())
	return r
}

// flow writes a flow file (replays load it again) with the given tasks section.
func (h *harness) flow(tasksYAML string) *flows.Flow {
	h.t.Helper()
	src := fmt.Sprintf(`name: tiles_test
defaults:
  retry: {max_attempts: 3, base_delay: 1ms, max_delay: 20ms}
  rate_limit: {concurrency: 8}
tasks:
%s`, tasksYAML)
	src = strings.ReplaceAll(src, "$URL", h.srv.URL)
	src = strings.ReplaceAll(src, "$DIR", h.dir)
	file := filepath.Join(h.dir, "flow.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		h.t.Fatal(err)
	}
	f, err := flows.Load(file, flows.Options{Registry: registry()})
	if err != nil {
		h.t.Fatalf("flow: %v\n%s", err, src)
	}
	return f
}

func (h *harness) handler() *retry.Handler {
	return retry.New(&retry.Options{Logger: h.logger(), Seed: 1})
}

func (h *harness) logger() *slog.Logger { return slog.New(slog.NewTextHandler(h.logs, nil)) }

func (h *harness) run(f *flows.Flow, opts engine.RunOptions) *engine.Result {
	h.t.Helper()
	opts.Store, opts.Logger = testflow.Stores(h.db), h.logger()
	if opts.HTTP == nil {
		opts.HTTP = h.handler()
	}
	res, err := engine.Run(context.Background(), f, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// basemap is a one-task flow over area at zooms.
func basemap(area orb.Bound, zooms string, extra string) string {
	return fmt.Sprintf(`  basemap:
    type: tiles
    url: $URL/{z}/{x}/{y}.png
    bbox: [%v, %v, %v, %v]
    zoom: %s
%s    target: {dir: $DIR/tiles, table: public.basemap_tiles}
`, area.Min[0], area.Min[1], area.Max[0], area.Max[1], zooms, extra)
}

var munich = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// cover computes the tiles of levels z0..z1 over b independently of the package (the
// inverse Mercator formulas of the slippy map wiki, as tilecover.Bound uses them).
func cover(b orb.Bound, z0, z1 int) map[string]bool {
	out := map[string]bool{}
	for z := z0; z <= z1; z++ {
		n := math.Exp2(float64(z))
		tx := func(lon float64) int { return int(math.Floor((lon + 180) / 360 * n)) }
		ty := func(lat float64) int {
			r := lat * math.Pi / 180
			return int(math.Floor((1 - math.Log(math.Tan(r)+1/math.Cos(r))/math.Pi) / 2 * n))
		}
		for x := tx(b.Min[0]); x <= tx(b.Max[0]); x++ {
			for y := ty(b.Max[1]); y <= ty(b.Min[1]); y++ {
				out[fmt.Sprintf("%d/%d/%d", z, x, y)] = true
			}
		}
	}
	return out
}

func (h *harness) files() map[string]bool {
	h.t.Helper()
	out := map[string]bool{}
	root := filepath.Join(h.dir, "tiles")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out[strings.TrimSuffix(filepath.ToSlash(rel), filepath.Ext(rel))] = true
		}
		return nil
	})
	return out
}

func (h *harness) rows(where string) map[string]bool {
	h.t.Helper()
	out := map[string]bool{}
	for _, r := range testdb.Rows(h.t, h.dbURL, "SELECT z || '/' || x || '/' || y FROM public.basemap_tiles WHERE "+where) {
		out[r[0].(string)] = true
	}
	return out
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// TestZoomRangeOnceThen304: a zoom range over an area stores every tile of the cover
// exactly once (rows = files = the cover), and a second run transfers nothing but 304s.
func TestZoomRangeOnceThen304(t *testing.T) {
	h := newHarness(t, tileserver.Options{})
	f := h.flow(basemap(munich, "[10, 16]", ""))
	want := cover(munich, 10, 16)
	if n := tiles.CountTiles(munich, 10, 16); n != int64(len(want)) {
		t.Fatalf("CountTiles = %d, the cover has %d", n, len(want))
	}
	res := h.run(f, engine.RunOptions{})
	if res.Status != store.Done || res.Summary.Inserted != int64(len(want)) {
		t.Fatalf("run %s, inserted %d; want done and %d\n%s", res.Status, res.Summary.Inserted, len(want), tail(h.logs.String()))
	}
	st := h.fx.Stats()
	if len(st.Served) != len(want) || st.OK != int64(len(want)) {
		t.Errorf("served %d distinct tiles in %d 200s; want %d once each", len(st.Served), st.OK, len(want))
	}
	for k, n := range st.Served {
		if !want[k] || n != 1 {
			t.Errorf("tile %s served %d times (in cover: %v)", k, n, want[k])
		}
	}
	rows, onDisk := h.rows("status = 'ok'"), h.files()
	if len(rows) != len(want) || len(onDisk) != len(want) {
		t.Fatalf("%d rows, %d files; want %d", len(rows), len(onDisk), len(want))
	}
	for k := range want {
		if !rows[k] || !onDisk[k] {
			t.Errorf("tile %s: row %v, file %v", k, rows[k], onDisk[k])
		}
	}
	// The index agrees with the onDisk and the fixture's validators.
	bad := testdb.Int64(t, h.dbURL, `SELECT count(*) FROM public.basemap_tiles WHERE etag IS NULL OR last_modified IS NULL
		OR content_type <> 'image/png' OR bytes <= 0 OR length(content_hash) <> 32 OR NOT ST_IsValid(footprint) OR ST_SRID(footprint) <> 4326`)
	if bad != 0 {
		t.Errorf("%d rows lack validators, type, size, hash or a valid footprint", bad)
	}
	for k := range onDisk {
		b, err := os.ReadFile(filepath.Join(h.dir, "tiles", filepath.FromSlash(k)+".png"))
		if err != nil || files.SniffImage(b) != files.FormatPNG {
			t.Errorf("tile %s: not a PNG file (%v)", k, err)
		}
		break
	}

	h.fx.ResetStats()
	res = h.run(f, engine.RunOptions{})
	st = h.fx.Stats()
	if res.Status != store.Done || st.OK != 0 || st.NotModified != int64(len(want)) || res.Summary.Skipped != int64(len(want)) || res.Summary.Inserted != 0 {
		t.Fatalf("second run %s: %d 200s, %d 304s, skipped %d inserted %d; want only %d 304s", res.Status, st.OK, st.NotModified,
			res.Summary.Skipped, res.Summary.Inserted, len(want))
	}

	// A file whose content no longer matches its row (a rename lost in a crash, a
	// local edit), even at the same size, is fetched again in full, not revalidated.
	victim := filepath.Join(h.dir, "tiles", "14", "8717", "5685.png")
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(victim, b, 0o644); err != nil {
		t.Fatal(err)
	}
	h.fx.ResetStats()
	h.run(f, engine.RunOptions{})
	if st := h.fx.Stats(); st.OK != 1 || st.Served["14/8717/5685"] != 1 || st.NotModified != int64(len(want)-1) {
		t.Errorf("after damaging one file: %d 200s (%v), %d 304s; want that tile fetched again", st.OK, st.Served, st.NotModified)
	}
	if b2, _ := os.ReadFile(victim); files.SniffImage(b2) != files.FormatPNG || bytes.Equal(b2, b) {
		t.Errorf("the damaged file was not restored")
	}

	// New content on the server: every tile is rewritten, in place.
	h.fx.Bump()
	h.fx.ResetStats()
	res = h.run(f, engine.RunOptions{})
	if st := h.fx.Stats(); res.Summary.Updated != int64(len(want)) || st.OK != int64(len(want)) {
		t.Errorf("after a change: %d updated, %d 200s; want %d", res.Summary.Updated, st.OK, len(want))
	}
	if n := len(h.files()); n != len(want) {
		t.Errorf("%d files after the rewrite; want %d", n, len(want))
	}
}

// TestHTML200NeverStored: an HTML page answered with 200 is never saved as a tile. A
// proxy's 502 page is retried (the server behind may recover); a portal's page fails the
// tile at once, as a dead letter.
func TestHTML200NeverStored(t *testing.T) {
	tests := []struct {
		name     string
		page     tileserver.HTML200
		maxReqs  int // requests for each broken tile
		wantDead bool
	}{
		{name: "proxy 502 page is transient", page: tileserver.HTMLProxy, maxReqs: 3, wantDead: true},
		{name: "portal page is permanent", page: tileserver.HTMLPortal, maxReqs: 1, wantDead: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tileserver.Options{})
			broken := func(z, x, y int) bool { return (x+y)%5 == 0 }
			h.fx.SetHTML200(tt.page, broken)
			// A fifth of the tiles failing on every attempt would open the host's circuit
			// breaker, as it should; this test is about what is stored, so it is off.
			hd := retry.New(&retry.Options{Logger: h.logger(), Seed: 1, Breaker: retry.Breaker{Disabled: true}})
			res := h.run(h.flow(basemap(munich, "[12, 14]", "")), engine.RunOptions{HTTP: hd})
			want := cover(munich, 12, 14)
			nBroken := 0
			for k := range want {
				var z, x, y int
				fmt.Sscanf(k, "%d/%d/%d", &z, &x, &y)
				if broken(z, x, y) {
					nBroken++
				}
			}
			if nBroken == 0 {
				t.Fatal("no broken tile in the cover")
			}
			if res.DeadLetters() != int64(nBroken) {
				t.Fatalf("%d dead units, want %d\n%s", res.DeadLetters(), nBroken, tail(h.logs.String()))
			}
			if st := h.fx.Stats(); st.HTML != int64(nBroken*tt.maxReqs) {
				t.Errorf("%d HTML pages served for %d broken tiles; want %d attempts each", st.HTML, nBroken, tt.maxReqs)
			}
			rows, files := h.rows("true"), h.files()
			if len(rows) != len(want)-nBroken || len(files) != len(want)-nBroken {
				t.Errorf("%d rows, %d files; want %d (no broken tile stored)", len(rows), len(files), len(want)-nBroken)
			}
			for k := range files {
				var z, x, y int
				fmt.Sscanf(k, "%d/%d/%d", &z, &x, &y)
				if broken(z, x, y) {
					t.Errorf("the HTML page of tile %s was stored", k)
				}
			}
			entries, err := h.db.ListDeadLetters(context.Background(), dlq.Filter{RunID: res.RunID})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Class != dlq.ClassParse || !strings.Contains(e.Error, "instead of an image") {
					t.Errorf("dead letter %s: %s %q", e.Unit, e.Class, e.Error)
				}
			}
		})
	}
}

// TestDeadTilesReplay: tiles that keep failing land in the dead-letter queue; once the
// server heals, a replay completes them and the run with them.
func TestDeadTilesReplay(t *testing.T) {
	h := newHarness(t, tileserver.Options{})
	dead := func(z, x, y int) bool { return z == 13 && x%3 == 0 }
	h.fx.SetFail(dead)
	f := h.flow(basemap(munich, "[11, 15]", ""))
	res := h.run(f, engine.RunOptions{})
	want := cover(munich, 11, 15)
	if res.DeadLetters() == 0 || res.Status != store.Failed {
		t.Fatalf("run %s with %d dead units; want failed with some", res.Status, res.DeadLetters())
	}
	ctx := context.Background()
	entries, err := h.db.ListDeadLetters(ctx, dlq.Filter{RunID: res.RunID, Status: dlq.StatusOpen})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(entries)) != res.DeadLetters() {
		t.Fatalf("%d open entries for %d dead units", len(entries), res.DeadLetters())
	}
	for _, e := range entries {
		if e.Class != dlq.ClassHTTP5xx || e.HTTPStatus != 500 || e.BBox == nil {
			t.Errorf("entry %s: class %s status %d bbox %v", e.Unit, e.Class, e.HTTPStatus, e.BBox)
		}
	}
	if got := len(h.rows("true")); got != len(want)-len(entries) {
		t.Errorf("%d rows before the replay; want %d", got, len(want)-len(entries))
	}
	h.fx.SetFail(nil)
	rr, err := engine.Replay(ctx, entries, engine.ReplayOptions{Store: testflow.Stores(h.db), HTTP: h.handler(), Registry: registry(), Logger: h.logger()})
	if err != nil {
		t.Fatal(err)
	}
	if !rr.OK() {
		t.Fatalf("replay not OK: %+v\n%s", rr, tail(h.logs.String()))
	}
	rows, files := h.rows("status = 'ok'"), h.files()
	if len(rows) != len(want) || len(files) != len(want) {
		t.Errorf("after the replay: %d rows, %d files; want %d", len(rows), len(files), len(want))
	}
	if st, _ := h.db.TaskState(ctx, res.RunID, "basemap"); st != store.Done {
		t.Errorf("task state after the replay: %s", st)
	}
}

// TestQuota429: a server that allows 40 requests a second answers the rest 429 with
// Retry-After; the harvest waits as told and completes, each tile fetched once.
func TestQuota429(t *testing.T) {
	h := newHarness(t, tileserver.Options{Quota: &tileserver.Quota{Limit: 40, Window: time.Second}})
	f := h.flow(basemap(munich, "[12, 15]", "    retry: {max_attempts: 8}\n"))
	want := cover(munich, 12, 15)
	res := h.run(f, engine.RunOptions{})
	st := h.fx.Stats()
	if res.Status != store.Done || res.Summary.Inserted != int64(len(want)) {
		t.Fatalf("run %s inserted %d; want %d\n%s", res.Status, res.Summary.Inserted, len(want), tail(h.logs.String()))
	}
	if st.TooMany == 0 {
		t.Errorf("the quota was never hit (%d requests for %d tiles)", st.Requests, len(want))
	}
	if len(st.Served) != len(want) || st.OK != int64(len(want)) {
		t.Errorf("%d 200s for %d tiles", st.OK, len(want))
	}
	t.Logf("%d tiles, %d requests, %d answered 429", len(want), st.Requests, st.TooMany)
}

// TestMissingOK: with missing_ok, tiles the server does not have are recorded as missing
// (no file) rather than failed; without it they are dead letters.
func TestMissingOK(t *testing.T) {
	coverage := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.50, 48.10}}
	want := cover(munich, 13, 14)

	h := newHarness(t, tileserver.Options{Coverage: coverage})
	res := h.run(h.flow(basemap(munich, "[13, 14]", "    missing_ok: true\n")), engine.RunOptions{})
	if res.Status != store.Done || res.DeadLetters() != 0 {
		t.Fatalf("run %s with %d dead\n%s", res.Status, res.DeadLetters(), tail(h.logs.String()))
	}
	ok, missing, files := h.rows("status = 'ok'"), h.rows("status = 'missing'"), h.files()
	if len(ok)+len(missing) != len(want) || len(missing) == 0 || len(files) != len(ok) {
		t.Errorf("%d ok rows, %d missing rows, %d files; want %d rows in all, files only for ok", len(ok), len(missing), len(files), len(want))
	}
	if n := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM public.basemap_tiles WHERE status = 'missing' AND (bytes <> 0 OR path IS NOT NULL)"); n != 0 {
		t.Errorf("%d missing rows with bytes or a path", n)
	}

	h2 := newHarness(t, tileserver.Options{Coverage: coverage})
	res = h2.run(h2.flow(basemap(munich, "[13, 14]", "")), engine.RunOptions{})
	if res.DeadLetters() != int64(len(missing)) {
		t.Errorf("without missing_ok: %d dead units, want %d", res.DeadLetters(), len(missing))
	}
}

// TestAreaRestrictsPlanning: --bbox plans only the tiles that touch it.
func TestAreaRestrictsPlanning(t *testing.T) {
	h := newHarness(t, tileserver.Options{})
	area := orb.Bound{Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.47, 48.07}}
	res := h.run(h.flow(basemap(munich, "[10, 16]", "")), engine.RunOptions{Area: &area})
	want := cover(area, 10, 16)
	st := h.fx.Stats()
	if res.Status != store.Done || len(st.Served) != len(want) {
		t.Fatalf("run %s fetched %d tiles; the area's cover has %d", res.Status, len(st.Served), len(want))
	}
	for k := range st.Served {
		if !want[k] {
			t.Errorf("tile %s is outside the run's area", k)
		}
	}
}

// TestBBoxFrom: a task takes its area from what another stored; naming a task that does
// not exist, or one it does not depend on, is refused when the flow is validated.
func TestBBoxFrom(t *testing.T) {
	h := newHarness(t, tileserver.Options{})
	small := orb.Bound{Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.47, 48.07}}
	f := h.flow(basemap(small, "[14, 14]", "") + `  overview:
    type: tiles
    url: $URL/{z}/{x}/{y}.png
    bbox_from: basemap
    depends_on: [basemap]
    zoom: [12, 12]
    target: {dir: $DIR/overview, table: public.overview_tiles}
`)
	res := h.run(f, engine.RunOptions{})
	if res.TaskStates["basemap"] != store.Done || res.TaskStates["overview"] != store.Done {
		t.Fatalf("states %v\n%s", res.TaskStates, tail(h.logs.String()))
	}
	if n := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM public.overview_tiles"); n < int64(len(cover(small, 12, 12))) {
		t.Errorf("overview stored %d tiles; the basemap's area needs at least %d", n, len(cover(small, 12, 12)))
	}
	for _, tt := range []struct{ name, task, want string }{
		{"unknown task", "bbox_from: nothing_here", `no task "nothing_here" in this flow`},
		{"not a dependency", "bbox_from: basemap", `bbox_from names "basemap", which must run first: add it to depends_on`},
	} {
		src := "name: refs\ntasks:\n  basemap: {type: tiles, url: \"http://t/{z}/{x}/{y}.png\", bbox: [0, 0, 1, 1], zoom: [1, 1], target: {dir: /tmp/x}}\n" +
			"  orphan: {type: tiles, url: \"http://t/{z}/{x}/{y}.png\", zoom: [1, 1], target: {dir: /tmp/y}, " + tt.task + "}\n"
		_, err := flows.Parse("refs.yaml", []byte(src), flows.Options{Registry: registry()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: validation said %v; want %q", tt.name, err, tt.want)
		}
	}
}

// TestRefusesBadConfig: problems are reported at their keys.
func TestRefusesBadConfig(t *testing.T) {
	tests := []struct{ name, task, want string }{
		{"no placeholders", "url: https://t.example.org/tile.png\nbbox: [0, 0, 1, 1]\nzoom: [1, 2]", "needs {z}, {x} and {y}"},
		{"unknown placeholder", "url: https://t.example.org/{z}/{x}/{row}.png\nbbox: [0, 0, 1, 1]\nzoom: [1, 2]", "unknown placeholder {row}"},
		{"zoom order", "url: https://t.example.org/{z}/{x}/{y}.png\nbbox: [0, 0, 1, 1]\nzoom: [5, 2]", "zoom levels must satisfy"},
		{"no area", "url: https://t.example.org/{z}/{x}/{y}.png\nzoom: [1, 2]", "bbox or bbox_from is required"},
		{"both areas", "url: https://t.example.org/{z}/{x}/{y}.png\nbbox: [0, 0, 1, 1]\nbbox_from: a\nzoom: [1, 2]", "not both"},
		{"bad scheme", "url: https://t.example.org/{z}/{x}/{y}.png\nscheme: google\nbbox: [0, 0, 1, 1]\nzoom: [1]", "scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: t\ntasks:\n  b:\n    type: tiles\n    target: {dir: /tmp/x, table: t}\n"
			for _, l := range strings.Split(tt.task, "\n") {
				src += "    " + l + "\n"
			}
			_, err := flows.Parse("t.yaml", []byte(src), flows.Options{Registry: registry()})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want a problem containing %q", err, tt.want)
			}
		})
	}
}
