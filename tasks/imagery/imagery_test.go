package imagery_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/stacserver"
	"github.com/geoflow/geoflow/internal/devserver/wmsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/imagery"
	"github.com/geoflow/geoflow/tasks/internal/files"
	"github.com/geoflow/geoflow/tasks/tiles"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type harness struct {
	t     *testing.T
	url   string
	dbURL string
	db    *postgis.Store
	dir   string
	logs  *bytes.Buffer
}

func newHarness(t *testing.T, srv *httptest.Server) *harness {
	t.Helper()
	t.Cleanup(srv.Close)
	dbURL := testdb.URL(t)
	db, err := postgis.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &harness{t: t, url: srv.URL, dbURL: dbURL, db: db, dir: t.TempDir(), logs: &bytes.Buffer{}}
}

func registry() *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(imagery.Kind())
	r.Register(tiles.Kind())
	return r
}

func (h *harness) run(taskYAML string, opts engine.RunOptions) *engine.Result {
	h.t.Helper()
	src := "name: imagery_test\ndefaults:\n  retry: {max_attempts: 3, base_delay: 1ms, max_delay: 20ms}\n  rate_limit: {concurrency: 4}\ntasks:\n" + taskYAML
	src = strings.ReplaceAll(strings.ReplaceAll(src, "$URL", h.url), "$DIR", h.dir)
	file := filepath.Join(h.dir, "flow.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		h.t.Fatal(err)
	}
	f, err := flows.Load(file, flows.Options{Registry: registry()})
	if err != nil {
		h.t.Fatalf("flow: %v\n%s", err, src)
	}
	log := slog.New(slog.NewTextHandler(h.logs, nil))
	opts.Store, opts.Logger = testflow.Stores(h.db), log
	opts.HTTP = retry.New(&retry.Options{Logger: log, Seed: 1})
	res, err := engine.Run(context.Background(), f, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

var munich = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// TestWMSChips: the area is cut into chips within the server's MaxWidth/MaxHeight at the
// requested resolution; each chip lands with its georeferencing and footprint.
func TestWMSChips(t *testing.T) {
	tests := []struct {
		name, crs, version string
		geotiff            bool
		res                float64
		maxSize, cw, ch    int // max_size given, and the chip size expected
	}{
		{name: "web mercator png + world file", crs: "EPSG:3857", version: "1.3.0", res: 10, cw: 256, ch: 200},
		{name: "geotiff when offered", crs: "EPSG:3857", version: "1.3.0", res: 10, geotiff: true, cw: 256, ch: 200},
		{name: "lat/lon 1.3.0 axis order", crs: "EPSG:4326", version: "1.3.0", res: 0.0001, cw: 256, ch: 200},
		// WMS 1.1.1 capabilities have no MaxWidth/MaxHeight: max_size is how to stay
		// within the server's limit.
		{name: "wms 1.1.1", crs: "EPSG:4326", version: "1.1.1", res: 0.0001, maxSize: 200, cw: 200, ch: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := wmsserver.New(wmsserver.Options{MaxWidth: 256, MaxHeight: 200, GeoTIFF: tt.geotiff})
			h := newHarness(t, httptest.NewServer(fx))
			res := h.run(fmt.Sprintf(`  ortho:
    type: imagery
    wms: {url: "$URL/wms?map=ortho.map", layers: ortho, crs: "%s", version: "%s", resolution: %v, max_size: %d}
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {dir: $DIR/chips, table: ortho_chips}
`, tt.crs, tt.version, tt.res, tt.maxSize), engine.RunOptions{})
			if res.Status != store.Done || res.Summary.Inserted == 0 {
				t.Fatalf("run %s inserted %d\n%s", res.Status, res.Summary.Inserted, tail(h.logs.String()))
			}
			area := munich
			if tt.crs == "EPSG:3857" {
				area = orb.Bound{Min: project.WGS84.ToMercator(munich.Min), Max: project.WGS84.ToMercator(munich.Max)}
			}
			cw, ch := float64(tt.cw), float64(tt.ch)
			cols := int(math.Ceil((area.Max[0]-area.Min[0])/(cw*tt.res) - 1e-9))
			rows := int(math.Ceil((area.Max[1]-area.Min[1])/(ch*tt.res) - 1e-9))
			st := fx.Stats()
			if len(st.GetMaps) != rows*cols || res.Summary.Inserted != int64(rows*cols) || st.Exceptions != 0 {
				t.Fatalf("%d GetMaps, %d stored, %d exceptions; want a %dx%d grid", len(st.GetMaps), res.Summary.Inserted, st.Exceptions, rows, cols)
			}
			for _, g := range st.GetMaps {
				if g.Width != tt.cw || g.Height != tt.ch {
					t.Errorf("chip of %dx%d, want %dx%d", g.Width, g.Height, tt.cw, tt.ch)
				}
				x0, y0, x1, y1 := g.BBox[0], g.BBox[1], g.BBox[2], g.BBox[3]
				if tt.crs == "EPSG:4326" && tt.version == "1.3.0" {
					x0, y0, x1, y1 = g.BBox[1], g.BBox[0], g.BBox[3], g.BBox[2]
					if g.BBox[0] < 40 {
						t.Fatalf("BBOX %v is not latitude first", g.BBox)
					}
				}
				if rx, ry := (x1-x0)/cw, (y1-y0)/ch; math.Abs(rx-tt.res) > tt.res*1e-6 || math.Abs(ry-tt.res) > tt.res*1e-6 {
					t.Errorf("chip resolution %g x %g, want %g", rx, ry, tt.res)
				}
			}
			n := testdb.Int64(t, h.dbURL, `SELECT count(*) FROM ortho_chips WHERE ST_IsValid(footprint) AND bytes > 0
				AND properties->>'crs' = '`+tt.crs+`' AND (properties->>'width')::int = `+strconv.Itoa(tt.cw))
			if n != int64(rows*cols) {
				t.Errorf("%d well-formed rows, want %d", n, rows*cols)
			}
			// The chips cover the area.
			if cov := testdb.Int64(t, h.dbURL, `SELECT count(*) FROM (SELECT ST_Union(footprint) u FROM ortho_chips) s
				WHERE ST_Covers(ST_Buffer(u, 1e-9), ST_MakeEnvelope(11.45, 48.05, 11.55, 48.15, 4326))`); cov != 1 {
				t.Errorf("the chips do not cover the area")
			}
			chips, _ := filepath.Glob(filepath.Join(h.dir, "chips", "chip_*"))
			var images, worlds int
			for _, f := range chips {
				switch filepath.Ext(f) {
				case ".png", ".tif":
					images++
					b, _ := os.ReadFile(f)
					if files.SniffImage(b) == "" {
						t.Errorf("%s is not an image", f)
					}
				case ".pgw":
					worlds++
				}
			}
			wantWorlds := rows * cols
			if tt.geotiff {
				wantWorlds = 0
			}
			if images != rows*cols || worlds != wantWorlds {
				t.Errorf("%d images, %d world files; want %d and %d", images, worlds, rows*cols, wantWorlds)
			}
			if !tt.geotiff {
				checkWorldFile(t, filepath.Join(h.dir, "chips", "chip_0_0.pgw"), area.Min[0], area.Max[1], tt.res)
			}
		})
	}
}

func checkWorldFile(t *testing.T, path string, ulx, uly, res float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := strings.Fields(string(b))
	v := make([]float64, len(l))
	for i := range l {
		v[i], _ = strconv.ParseFloat(l[i], 64)
	}
	if len(v) != 6 || math.Abs(v[0]-res) > res*1e-6 || v[1] != 0 || v[2] != 0 || math.Abs(v[3]+res) > res*1e-6 ||
		math.Abs(v[4]-(ulx+res/2)) > res*1e-3 || math.Abs(v[5]-(uly-res/2)) > res*1e-3 {
		t.Errorf("world file %v; want %g 0 0 %g %g %g", v, res, -res, ulx+res/2, uly-res/2)
	}
}

// TestWMSRefusesMissingLayer: a layer the capabilities do not list fails planning
// before any GetMap.
func TestWMSRefusesMissingLayer(t *testing.T) {
	fx := wmsserver.New(wmsserver.Options{})
	h := newHarness(t, httptest.NewServer(fx))
	res := h.run(`  ortho:
    type: imagery
    wms: {url: "$URL/wms", layers: "ortho,nope", resolution: 10}
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {dir: $DIR/chips, table: ortho_chips}
`, engine.RunOptions{})
	if msg := res.FailedTasks["ortho"]; !strings.Contains(msg, `no layer "nope"`) || len(fx.Stats().GetMaps) != 0 {
		t.Errorf("task error %q after %d GetMaps", msg, len(fx.Stats().GetMaps))
	}
}

const stacTask = `  scenes:
    type: imagery
    stac: {url: "$URL", collections: [aerial], datetime: "2024-01-01T00:00:00Z/..", assets: [visual], limit: 100}
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {dir: $DIR/scenes, table: scenes}
`

// TestSTAC: paged search (next links that are POSTs), a transfer cut mid-file that
// resumes with Range from the byte where it stopped, and a checksum mismatch that fails
// its asset as a dead letter and leaves no file. A rerun fetches nothing it has verified.
func TestSTAC(t *testing.T) {
	fx := stacserver.New(stacserver.Options{Items: 12, MaxLimit: 5, BadChecksum: "scene-004"})
	h := newHarness(t, httptest.NewServer(fx))
	const cutAt = 70_001
	fx.CutNext("scene-002", cutAt)
	res := h.run(stacTask, engine.RunOptions{})
	st := fx.Stats()
	if st.Searches != 3 {
		t.Errorf("%d searches; 12 items at 5 a page are 3 pages", st.Searches)
	}
	if res.Summary.Inserted != 11 || res.DeadLetters() != 1 {
		t.Fatalf("inserted %d with %d dead; want 11 and 1\n%s", res.Summary.Inserted, res.DeadLetters(), tail(h.logs.String()))
	}
	// The cut transfer resumed from the byte where it stopped.
	if r := st.Ranges[stacserver.AssetPath("scene-002")]; len(r) != 2 || r[0] != "" || r[1] != fmt.Sprintf("bytes=%d-", cutAt) {
		t.Errorf("Range headers for the cut asset: %q; want [\"\" \"bytes=%d-\"]", r, cutAt)
	}
	got, err := os.ReadFile(filepath.Join(h.dir, "scenes", "aerial", "scene-002", "visual.tif"))
	if err != nil || !bytes.Equal(got, fx.Content("scene-002")) {
		t.Errorf("the resumed file differs from the server's (%d bytes, err %v)", len(got), err)
	}
	// The mismatched asset: a dead letter, no file, no partial file, no row.
	if _, err := os.Stat(filepath.Join(h.dir, "scenes", "aerial", "scene-004", "visual.tif")); !os.IsNotExist(err) {
		t.Errorf("the asset with a wrong checksum was stored")
	}
	if m, _ := filepath.Glob(filepath.Join(h.dir, "scenes", "aerial", "scene-004", "*")); len(m) != 0 {
		t.Errorf("files left for the bad asset: %v", m)
	}
	entries, err := h.db.ListDeadLetters(context.Background(), dlq.Filter{RunID: res.RunID})
	if err != nil || len(entries) != 1 || !strings.Contains(entries[0].Error, "checksum mismatch") ||
		entries[0].Unit != "item/aerial/scene-004/visual" {
		t.Fatalf("dead letters %+v (%v)", entries, err)
	}
	rows := testdb.Rows(t, h.dbURL, `SELECT item, bytes, checksum IS NOT NULL, ST_GeometryType(footprint), datetime IS NOT NULL,
		properties->>'platform' FROM scenes ORDER BY item`)
	if len(rows) != 11 {
		t.Fatalf("%d rows, want 11", len(rows))
	}
	for _, r := range rows {
		if r[1].(int64) != 200_000 || r[2] != true || r[3] != "ST_Polygon" || r[4] != true || r[5] != "fixture-plane" {
			t.Errorf("row %v", r)
		}
	}

	// A rerun fetches none of the verified assets again.
	before := fx.Stats().AssetRequests
	res = h.run(stacTask, engine.RunOptions{})
	if n := fx.Stats().AssetRequests - before; n != 1 || res.Summary.Skipped != 11 {
		t.Errorf("rerun: %d asset requests (only the bad one expected), %d skipped", n, res.Summary.Skipped)
	}
}

// TestSTACResumesPartialFile: a partial file left by a process that died mid-download is
// continued with Range and If-Range, not fetched again from the start.
func TestSTACResumesPartialFile(t *testing.T) {
	fx := stacserver.New(stacserver.Options{Items: 4})
	h := newHarness(t, httptest.NewServer(fx))
	content := fx.Content("scene-001")
	part := filepath.Join(h.dir, "scenes", "aerial", "scene-001", "visual.tif.part")
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, content[:12345], 0o644); err != nil {
		t.Fatal(err)
	}
	res := h.run(stacTask, engine.RunOptions{})
	if res.Status != store.Done || res.Summary.Inserted != 4 {
		t.Fatalf("run %s inserted %d\n%s", res.Status, res.Summary.Inserted, tail(h.logs.String()))
	}
	if r := fx.Stats().Ranges[stacserver.AssetPath("scene-001")]; len(r) != 1 || r[0] != "bytes=12345-" {
		t.Errorf("Range headers %q; want [bytes=12345-]", r)
	}
	got, _ := os.ReadFile(filepath.Join(h.dir, "scenes", "aerial", "scene-001", "visual.tif"))
	if !bytes.Equal(got, content) {
		t.Errorf("the resumed file differs from the server's")
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("the partial file is still there")
	}
}

// TestSTACArea: --bbox narrows the search.
func TestSTACArea(t *testing.T) {
	fx := stacserver.New(stacserver.Options{Items: 12})
	h := newHarness(t, httptest.NewServer(fx))
	area := orb.Bound{Min: orb.Point{11.451, 48.051}, Max: orb.Point{11.46, 48.06}}
	res := h.run(stacTask, engine.RunOptions{Area: &area})
	if res.Status != store.Done || res.Summary.Inserted != 1 {
		t.Errorf("run %s inserted %d; the area touches one scene\n%s", res.Status, res.Summary.Inserted, tail(h.logs.String()))
	}
}

// TestSTACHeadersStayWithTheCatalogue: a task's headers (a catalogue's API key) go to
// the catalogue's origin only. The catalogue names asset hrefs on another host (a
// CDN, an object store); they are fetched without the key.
func TestSTACHeadersStayWithTheCatalogue(t *testing.T) {
	fx := stacserver.New(stacserver.Options{Items: 3})
	var mu sync.Mutex
	var keysAtCDN, keysAtCatalogue []string
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keysAtCDN = append(keysAtCDN, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		fx.ServeHTTP(w, r)
	}))
	t.Cleanup(cdn.Close)
	var catalogueURL string
	catalogue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keysAtCatalogue = append(keysAtCatalogue, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		rec := httptest.NewRecorder()
		fx.ServeHTTP(rec, r)
		body := strings.ReplaceAll(rec.Body.String(), catalogueURL+"/assets/", cdn.URL+"/assets/")
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		io.WriteString(w, body)
	}))
	catalogueURL = catalogue.URL
	h := newHarness(t, catalogue)
	res := h.run(strings.Replace(stacTask, "    bbox:", "    headers: {X-Api-Key: CATALOGUEKEY}\n    bbox:", 1), engine.RunOptions{})
	if res.Summary.Inserted != 3 || res.DeadLetters() != 0 {
		t.Fatalf("inserted %d, %d dead\n%s", res.Summary.Inserted, res.DeadLetters(), tail(h.logs.String()))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keysAtCDN) < 3 || len(keysAtCatalogue) == 0 {
		t.Fatalf("%d requests at the CDN, %d at the catalogue", len(keysAtCDN), len(keysAtCatalogue))
	}
	for _, k := range keysAtCatalogue {
		if k != "CATALOGUEKEY" {
			t.Errorf("the catalogue got X-Api-Key %q; want its key", k)
		}
	}
	for _, k := range keysAtCDN {
		if k != "" {
			t.Errorf("the asset host got X-Api-Key %q; want none", k)
		}
	}
}
