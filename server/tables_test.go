package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/store"
)

// get fetches path from the UI and returns the answer with its body read.
func (u *ui) get(path string, header ...string) (*http.Response, []byte) {
	u.t.Helper()
	req, err := http.NewRequest("GET", u.srv.URL+path, nil)
	if err != nil {
		u.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		u.t.Fatal(err)
	}
	return resp, b
}

// queryRow runs a one-row query against the test database, for its Scan.
func (u *ui) queryRow(query string, args ...any) pgx.Row {
	u.t.Helper()
	conn, err := pgx.Connect(context.Background(), u.dbURL)
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn.QueryRow(context.Background(), query, args...)
}

// harvest runs the parcels flow to its end and returns the run.
func (u *ui) harvest() store.RunRecord {
	u.t.Helper()
	id, err := u.launcher.StartRun(context.Background(), "parcels", flowsScope())
	if err != nil {
		u.t.Fatal(err)
	}
	run := u.waitRun(id)
	if run.Status != store.Done {
		u.t.Fatalf("run %d: %s (%s)", id, run.Status, run.Error)
	}
	return run
}

// centreTile is the tile of zoom z at the harvested area's centre.
func centreTile(z maptile.Zoom) maptile.Tile { return maptile.At(harvestArea.Center(), z) }

// tileParcels counts the stored parcels whose geometry meets tile t.
func (u *ui) tileParcels(t maptile.Tile) int64 {
	b := t.Bound()
	return u.count(`SELECT count(*) FROM public.parcels WHERE ST_Intersects(geom, ST_MakeEnvelope($1, $2, $3, $4, 4326))`,
		b.Min[0], b.Min[1], b.Max[0], b.Max[1])
}

// TestTablesAPI: the tables geoflow wrote are listed and served as vector tiles, with
// ETags, downloads and a feature's detail; nothing else of the database is.
func TestTablesAPI(t *testing.T) {
	u := newUI(t, uiOptions{})
	run := u.harvest()

	resp, body := u.get("/tables")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `href="/tables/parcels"`) || !strings.Contains(string(body), `href="/flows/parcels"`) {
		t.Fatalf("/tables: %d, parcels listed with its flow: %v", resp.StatusCode, strings.Contains(string(body), "/tables/parcels"))
	}
	if strings.Contains(string(body), "geoflow_runs") {
		t.Error("/tables lists geoflow's bookkeeping")
	}

	tile := centreTile(14)
	path := fmt.Sprintf("/vt/parcels/%d/%d/%d.mvt", tile.Z, tile.X, tile.Y)
	resp, body = u.get(path)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.mapbox-vector-tile" {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	layers, err := mvt.Unmarshal(body)
	if err != nil || len(layers) != 1 || layers[0].Name != "parcels" {
		t.Fatalf("%s: %v, %d layers", path, err, len(layers))
	}
	want := u.tileParcels(tile)
	if got := int64(len(layers[0].Features)); got < want || want == 0 {
		t.Errorf("%s holds %d features; %d parcels meet the tile", path, got, want)
	}
	f := layers[0].Features[0]
	if f.ID == nil || f.Properties["parcel_id"] == nil || f.Properties["gf_feature_id"] == nil {
		t.Errorf("a tile's feature: id %v, properties %v", f.ID, f.Properties)
	}
	t.Logf("%s: %d features (%d parcels meet the tile), %d bytes", path, len(layers[0].Features), want, len(body))

	tag := resp.Header.Get("ETag")
	if again, _ := u.get(path, "If-None-Match", tag); tag == "" || again.StatusCode != http.StatusNotModified {
		t.Errorf("asked again with its ETag %q: %d, want 304", tag, again.StatusCode)
	}
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/vt/parcels/14/0/0.mvt", http.StatusNoContent},
		{"/vt/geoflow_runs/0/0/0.mvt", http.StatusNotFound},
		{"/vt/pg_catalog.pg_class/0/0/0.mvt", http.StatusNotFound},
		{"/vt/nothing/0/0/0.mvt", http.StatusNotFound},
		{"/vt/parcels/2/9/0.mvt", http.StatusBadRequest},
		{"/vt/parcels/0/0/0.mvt?asof=x", http.StatusBadRequest},
		{"/rt/parcels/0/0/0", http.StatusNotFound},
		{"/api/tables/parcels/features?format=shp", http.StatusBadRequest},
		{"/api/tables/parcels/features/12", http.StatusNotFound},
	} {
		if resp, body := u.get(tc.path); resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d: %s", tc.path, resp.StatusCode, tc.code, body)
		}
	}

	// The detail of the clicked feature: its attributes, as stored.
	id := fmt.Sprint(f.ID)
	if x, ok := f.ID.(float64); ok { // orb decodes ids as numbers
		id = strconv.FormatFloat(x, 'f', 0, 64)
	}
	resp, body = u.get("/api/tables/parcels/features/" + id)
	var detail struct {
		Features []struct {
			FeatureID  string         `json:"feature_id"`
			Run        int64          `json:"run"`
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal(body, &detail); resp.StatusCode != 200 || err != nil || len(detail.Features) != 1 {
		t.Fatalf("feature %s: %d %v: %s", id, resp.StatusCode, err, body)
	}
	d := detail.Features[0]
	if d.FeatureID != f.Properties["gf_feature_id"] || d.Run != run.ID || fmt.Sprint(d.Properties["parcel_id"]) != fmt.Sprint(f.Properties["parcel_id"]) {
		t.Errorf("feature %s: %+v; the tile says %v", id, d, f.Properties)
	}

	// Downloads: the whole table and the features in a box, as GeoJSON.
	var fc struct {
		Features []json.RawMessage `json:"features"`
		Returned int64             `json:"numberReturned"`
	}
	resp, body = u.get("/api/tables/parcels/features")
	if err := json.Unmarshal(body, &fc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	if all := u.count(`SELECT count(*) FROM public.parcels`); int64(len(fc.Features)) != all || fc.Returned != all {
		t.Errorf("the GeoJSON download holds %d features (says %d); the table %d", len(fc.Features), fc.Returned, all)
	}
	box := tile.Bound()
	resp, body = u.get(fmt.Sprintf("/api/tables/parcels/features?bbox=%g,%g,%g,%g", box.Min[0], box.Min[1], box.Max[0], box.Max[1]))
	fc.Features = nil
	if err := json.Unmarshal(body, &fc); resp.StatusCode != 200 || err != nil || int64(len(fc.Features)) != want {
		t.Errorf("the download of a box: %d, %d features (%v); %d meet it", resp.StatusCode, len(fc.Features), err, want)
	}
	checkGeoPackageDownload(t, u, want, fmt.Sprintf("bbox=%g,%g,%g,%g", box.Min[0], box.Min[1], box.Max[0], box.Max[1]))
	checkOGRReadsTile(t, u, tile, want)

	// GeoPackage downloads are written one at a time: three at once all arrive.
	codes := make(chan int, 3)
	for range 3 {
		go func() {
			resp, err := http.Get(u.srv.URL + "/api/tables/parcels/features?format=gpkg")
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range 3 {
		if code := <-codes; code != 200 {
			t.Errorf("a GeoPackage download among three at once: %d", code)
		}
	}
}

// checkGeoPackageDownload: GDAL reads the GeoPackage of a box's features.
func checkGeoPackageDownload(t *testing.T, u *ui, want int64, query string) {
	resp, body := u.get("/api/tables/parcels/features?format=gpkg&" + query)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/geopackage+sqlite3" {
		t.Fatalf("GeoPackage download: %d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	file := filepath.Join(t.TempDir(), "parcels.gpkg")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	out := ogrinfo(t, "-so", "-al", file)
	if !strings.Contains(out, "Feature Count: "+strconv.FormatInt(want, 10)) || !strings.Contains(out, "parcel_id") {
		t.Errorf("ogrinfo on the GeoPackage download (want %d features with parcel_id):\n%s", want, out)
	}
}

// checkOGRReadsTile: GDAL's MVT driver reads a served tile, saved where its z/x/y
// path says which tile it is, and lists its features with their attributes.
func checkOGRReadsTile(t *testing.T, u *ui, tile maptile.Tile, want int64) {
	_, body := u.get(fmt.Sprintf("/vt/parcels/%d/%d/%d.mvt", tile.Z, tile.X, tile.Y))
	dir := filepath.Join(t.TempDir(), strconv.Itoa(int(tile.Z)), strconv.FormatUint(uint64(tile.X), 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, strconv.FormatUint(uint64(tile.Y), 10)+".pbf")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	out := ogrinfo(t, "-al", "-so", file)
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "Feature Count: "); ok {
			n, _ = strconv.Atoi(s)
		}
	}
	if int64(n) < want || !strings.Contains(out, "parcel_id") {
		t.Errorf("ogrinfo on a served tile lists %d features (want %d, with parcel_id):\n%s", n, want, out)
	}
	t.Logf("ogrinfo -al -so %s: %d features", file, n)
}

// ogrinfo runs GDAL's ogrinfo: make test installs it; a machine without it fails.
func ogrinfo(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ogrinfo", append([]string{"-ro"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBrowserTableFeature: a table's page draws its features from vector tiles; a
// click on a parcel shows its attributes, as stored, in the panel.
func TestBrowserTableFeature(t *testing.T) {
	u := newUI(t, uiOptions{})
	u.harvest()
	// A parcel near the centre, and a point inside it.
	var fid, pid string
	var lon, lat float64
	if err := u.queryRow(`SELECT gf_feature_id, parcel_id::text, ST_X(p), ST_Y(p)
		FROM (SELECT *, ST_PointOnSurface(geom) AS p FROM public.parcels) s
		ORDER BY p <-> ST_SetSRID(ST_MakePoint($1, $2), 4326) LIMIT 1`, harvestArea.Center()[0], harvestArea.Center()[1]).Scan(&fid, &pid, &lon, &lat); err != nil {
		t.Fatal(err)
	}
	ctx := startBrowser(t)
	navigate(t, ctx, u.srv.URL+"/tables/parcels")
	waitFor(t, ctx, "the table's map", `document.getElementById('table-map').dataset.ready === '1'`, 30*time.Second)
	// Close in on the parcel, then click it.
	eval[any](t, ctx, fmt.Sprintf(`geoflow.maps['table-map'].map.jumpTo({center: [%g, %g], zoom: 17}), null`, lon, lat))
	waitFor(t, ctx, "the parcel to be drawn", fmt.Sprintf(`(() => { const m = geoflow.maps['table-map'].map;
		return m.loaded() && m.queryRenderedFeatures(m.project([%g, %g]), {layers: ['table-fill']}).length > 0; })()`, lon, lat), 30*time.Second)
	xy := eval[[]float64](t, ctx, fmt.Sprintf(`(() => { const m = geoflow.maps['table-map'].map;
		const r = m.getCanvas().getBoundingClientRect(), p = m.project([%g, %g]); return [r.left + p.x, r.top + p.y]; })()`, lon, lat))
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the feature's panel", `!document.getElementById('feature').hidden && !!document.querySelector('#feature table.kv')`, 10*time.Second)
	waitFor(t, ctx, "the feature's history", `!document.querySelector('#feature .versions').textContent.startsWith('loading')`, 10*time.Second)
	panel := eval[string](t, ctx, `document.getElementById('feature').innerText`)
	for _, want := range []string{fid, "parcel_id", pid, "run 1"} {
		if !strings.Contains(panel, want) {
			t.Errorf("the panel of parcel %s lacks %q:\n%s", fid, want, panel)
		}
	}
	t.Logf("clicked parcel %s (parcel_id %s); the panel shows:\n%s", fid, pid, panel)
}

// changesCLI counts by kind what geoflow changes RUN --json lists.
func changesCLI(t *testing.T, db string, run int64) map[string]int {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(context.Background(), []string{"--database", db, "changes", strconv.FormatInt(run, 10), "--json"}, &out, &errb); code != 0 {
		t.Fatalf("geoflow changes %d: exit %d: %s", run, code, errb.String())
	}
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var c struct{ Change string }
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("geoflow changes %d --json: %q: %v", run, line, err)
		}
		n[c.Change]++
	}
	return n
}

// TestBrowserMirrorChanges: a mirror run's page colours what it inserted, updated and
// deleted, as many of each as geoflow changes lists, and the table's page draws the
// table as it was after each run.
func TestBrowserMirrorChanges(t *testing.T) {
	changes := wfsserver.Changes{Edited: 12, Deleted: 7, Added: 5}
	u := newUI(t, uiOptions{target: "{table: public.parcels, mode: mirror, history: true}", changes: changes})
	first := u.harvest()
	if err := u.fx.SetRevision(1, changes); err != nil {
		t.Fatal(err)
	}
	second := u.harvest()

	want := changesCLI(t, u.dbURL, second.ID)
	if want[store.ChangeInserted] != changes.Added || want[store.ChangeUpdated] != changes.Edited || want[store.ChangeDeleted] != changes.Deleted {
		t.Fatalf("run %d's changes: %v; the server changed %+v", second.ID, want, changes)
	}
	ctx := startBrowser(t)
	navigate(t, ctx, fmt.Sprintf("%s/runs/%d", u.srv.URL, second.ID))
	waitFor(t, ctx, "the run map", `document.getElementById('run-map').dataset.ready === '1'`, 30*time.Second)
	for _, kind := range []string{store.ChangeInserted, store.ChangeUpdated, store.ChangeDeleted} {
		k := strings.ToUpper(kind[:1]) + kind[1:]
		drawn := eval[string](t, ctx, `document.getElementById('run-map').dataset.drawn`+k)
		legend := eval[string](t, ctx, `document.querySelector('#run-map-changes .count-`+kind+`').textContent`)
		if drawn != strconv.Itoa(want[kind]) || legend != strconv.Itoa(want[kind]) {
			t.Errorf("%s: %s drawn, legend %s; geoflow changes %d lists %d", kind, drawn, legend, second.ID, want[kind])
		}
	}
	t.Logf("geoflow changes %d: %v; the run's map draws %s inserted, %s updated, %s deleted", second.ID, want,
		eval[string](t, ctx, `document.getElementById('run-map').dataset.drawnInserted`),
		eval[string](t, ctx, `document.getElementById('run-map').dataset.drawnUpdated`),
		eval[string](t, ctx, `document.getElementById('run-map').dataset.drawnDeleted`))

	// As of the first run, the deleted parcels are there again.
	var gone string
	if err := u.db.ListChanges(context.Background(), store.ChangeFilter{RunID: second.ID}, func(c store.Change) error {
		if c.Kind == store.ChangeDeleted && gone == "" {
			gone = c.FeatureID
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var lon, lat float64
	if err := u.queryRow(`SELECT ST_X(p), ST_Y(p) FROM (SELECT ST_PointOnSurface(geom) AS p
		FROM public.parcels WHERE gf_feature_id = $1) s`, gone).Scan(&lon, &lat); err != nil {
		t.Fatal(err)
	}
	drawnAt := func(asof string) bool {
		navigate(t, ctx, u.srv.URL+"/tables/parcels"+asof)
		waitFor(t, ctx, "the table's map", `document.getElementById('table-map').dataset.ready === '1'`, 30*time.Second)
		eval[any](t, ctx, fmt.Sprintf(`geoflow.maps['table-map'].map.jumpTo({center: [%g, %g], zoom: 17}), null`, lon, lat))
		waitFor(t, ctx, "the map to settle", `geoflow.maps['table-map'].map.loaded() && geoflow.maps['table-map'].map.areTilesLoaded()`, 30*time.Second)
		return eval[bool](t, ctx, fmt.Sprintf(`(() => { const m = geoflow.maps['table-map'].map;
			return m.queryRenderedFeatures(m.project([%g, %g]), {layers: ['table-fill']}).some(f => f.properties.gf_feature_id === %q); })()`, lon, lat, gone))
	}
	if drawnAt("") {
		t.Errorf("parcel %s, deleted by run %d, is drawn now", gone, second.ID)
	}
	if !drawnAt(fmt.Sprintf("?asof=%d", first.ID)) {
		t.Errorf("parcel %s is not drawn as of run %d, before it was deleted", gone, first.ID)
	}
}
