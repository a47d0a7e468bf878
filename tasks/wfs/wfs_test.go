package wfs_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/wfs"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// harness is one fixture server, one database and a way to run a flow against them.
type harness struct {
	t     *testing.T
	fx    *wfsserver.Server
	srv   *httptest.Server
	dbURL string
	db    *postgis.Store
	logs  *bytes.Buffer
}

func newHarness(t *testing.T, opts wfsserver.Options) *harness {
	t.Helper()
	fx := wfsserver.New(opts)
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	dbURL := testdb.URL(t)
	db, err := postgis.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &harness{t: t, fx: fx, srv: srv, dbURL: dbURL, db: db, logs: &bytes.Buffer{}}
}

func registry() *tasks.Registry {
	r := &tasks.Registry{}
	r.Register(wfs.Kind())
	return r
}

// run runs a one-task flow whose task keys are given as YAML lines.
func (h *harness) run(taskYAML string, opts engine.RunOptions) *engine.Result {
	h.t.Helper()
	return testflow.Run(h.t, wfs.Kind(), h.srv.URL+"/wfs", taskYAML, h.db, h.logs, opts)
}

var extent = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// checkComplete asserts the table holds exactly the fixture's features in b, once each,
// with attributes and geometry as served and x = longitude.
func (h *harness) checkComplete(table string, b orb.Bound) {
	h.t.Helper()
	want := h.fx.FeaturesIn(b)
	rows := testdb.Int64(h.t, h.dbURL, "SELECT count(*) FROM "+table)
	distinct := testdb.Int64(h.t, h.dbURL, "SELECT count(DISTINCT gf_feature_id) FROM "+table)
	if rows != int64(len(want)) || distinct != rows {
		h.t.Fatalf("%s: %d rows, %d distinct; the server has %d features in the box\nlogs:\n%s", table, rows, distinct, len(want), tail(h.logs.String()))
	}
	// Spot-check a spread of features: attributes equal, vertices equal within 1e-7.
	for k := 0; k < len(want); k += max(1, len(want)/25) {
		f := h.fx.Feature(want[k])
		got := testdb.Rows(h.t, h.dbURL, `SELECT parcel_id, cadastre_no, area_m2, land_use, is_public, owner_count,
			assessed_value::text, surveyed::text, ST_AsText(geom), ST_X(ST_PointN(ST_ExteriorRing(ST_GeometryN(geom, 1)), 1)),
			ST_Y(ST_PointN(ST_ExteriorRing(ST_GeometryN(geom, 1)), 1)), ST_NPoints(geom) FROM `+table+` WHERE gf_feature_id = $1`, f.ID)
		if len(got) != 1 {
			h.t.Fatalf("feature %s: %d rows", f.ID, len(got))
		}
		r := got[0]
		p := f.Properties
		if r[0] != p["parcel_id"] || r[1] != p["cadastre_no"] || r[2] != p["area_m2"] || r[4] != p["is_public"] {
			h.t.Errorf("feature %s: stored %v, served %v", f.ID, r[:5], p)
		}
		if fmt.Sprint(r[3]) != fmt.Sprint(orNil(p["Land-Use"])) || !sameDecimal(r[6], p["assessed_value"]) || fmt.Sprint(r[7]) != fmt.Sprint(orNil(p["surveyed"])) {
			h.t.Errorf("feature %s: land_use/assessed_value/surveyed stored %v %v %v, served %v %v %v", f.ID, r[3], r[6], r[7], p["Land-Use"], p["assessed_value"], p["surveyed"])
		}
		first := firstVertex(f.Geometry)
		if x, y := r[9].(float64), r[10].(float64); math.Abs(x-first[0]) > 1e-7 || math.Abs(y-first[1]) > 1e-7 {
			h.t.Errorf("feature %s: first vertex stored (%v %v), served (%v %v): axis order or precision wrong", f.ID, x, y, first[0], first[1])
		}
		if n := r[11].(int32); int(n) != countPoints(f.Geometry) {
			h.t.Errorf("feature %s: %d vertices stored, %d served", f.ID, n, countPoints(f.Geometry))
		}
	}
}

// sameDecimal compares a stored numeric with the served lexical decimal by value: GeoJSON
// carries decimals as JSON numbers, which keep no trailing zeros.
func sameDecimal(stored, served any) bool {
	if stored == nil || served == nil {
		return stored == nil && served == nil
	}
	a, err1 := strconv.ParseFloat(fmt.Sprint(stored), 64)
	b, err2 := strconv.ParseFloat(fmt.Sprint(served), 64)
	return err1 == nil && err2 == nil && a == b
}

func orNil(v any) any {
	if v == nil {
		return nil
	}
	return v
}

func firstVertex(g orb.Geometry) orb.Point {
	switch v := g.(type) {
	case orb.Polygon:
		return v[0][0]
	case orb.MultiPolygon:
		return v[0][0][0]
	}
	panic(fmt.Sprintf("unexpected %T", g))
}

func countPoints(g orb.Geometry) int {
	n := 0
	switch v := g.(type) {
	case orb.Polygon:
		for _, r := range v {
			n += len(r)
		}
	case orb.MultiPolygon:
		for _, p := range v {
			n += countPoints(p)
		}
	}
	return n
}

func tail(s string) string { return testflow.Tail(s) }

func TestHarvestComplete(t *testing.T) {
	tests := []struct {
		name string
		opts wfsserver.Options
		keys string
	}{
		{name: "wfs 2.0 geojson", opts: wfsserver.Options{Features: 3000, CountDefault: 500, ImplementsSorting: true}},
		{name: "wfs 2.0 gml 3.2", opts: wfsserver.Options{Features: 3000, CountDefault: 500}, keys: "output_format: gml"},
		{name: "wfs 1.1 gml 3.1.1", opts: wfsserver.Options{Features: 2000, CountDefault: 400}, keys: "version: 1.1.0\noutput_format: gml"},
		{name: "wfs 1.0 gml2", opts: wfsserver.Options{Features: 2000, CountDefault: 400}, keys: "version: 1.0.0"},
		{name: "mapserver", opts: wfsserver.Options{Features: 2000, CountDefault: 300, Flavor: "mapserver"}, keys: "typename: parcels"},
		{name: "deegree", opts: wfsserver.Options{Features: 2000, CountDefault: 300, Flavor: "deegree"}, keys: "output_format: gml"},
		{name: "qgis", opts: wfsserver.Options{Features: 1500, CountDefault: 300, Flavor: "qgis"}, keys: "typename: parcels"},
		{name: "unstable order, no sorting, small pages", opts: wfsserver.Options{Features: 3000, CountDefault: 100, UnstableOrder: true}},
		{name: "numberMatched unknown", opts: wfsserver.Options{Features: 2000, CountDefault: 300, SkipNumberMatched: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			keys := tt.keys
			if !strings.Contains(keys, "typename") {
				keys += "\ntypename: " + h.fx.TypeName()
			}
			res := h.run(keys+"\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: public.parcels}", engine.RunOptions{})
			if res.Status != store.Done {
				t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
			}
			h.checkComplete("public.parcels", extent)
			if n := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM pg_indexes WHERE tablename = 'parcels' AND indexdef LIKE '%USING gist (geom)%'"); n != 1 {
				t.Errorf("%d spatial indexes on the new table after the harvest, want 1 (built at the end)", n)
			}
			if !strings.Contains(h.logs.String(), "complete: every feature the server counted is stored") && !strings.Contains(keys, "1.0.0") {
				t.Errorf("no completeness report in the logs")
			}
			// A rerun stores nothing new: every feature is already present.
			res2 := h.run(keys+"\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: public.parcels}", engine.RunOptions{})
			if res2.Summary.Inserted != 0 || res2.Summary.Skipped < int64(len(h.fx.FeaturesIn(extent))) {
				t.Errorf("rerun inserted %d, skipped %d; want 0 and at least %d", res2.Summary.Inserted, res2.Summary.Skipped, len(h.fx.FeaturesIn(extent)))
			}
		})
	}
}

// TestHarvestFaults: truncated bodies, proxy HTML pages and exception reports with 200,
// and 5xx, on a fifth of the requests: every feature still lands exactly once.
func TestHarvestFaults(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 2000, CountDefault: 250, Faults: wfsserver.Faults{
		Rate5xx: 0.06, RateTruncate: 0.08, RateHTML200: 0.04, Seed: 7}})
	res := h.run("typename: gf:parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{})
	if res.Status != store.Done || res.DeadLetters() != 0 {
		t.Fatalf("run %s with %d dead units\n%s", res.Status, res.DeadLetters(), tail(h.logs.String()))
	}
	st := h.fx.Stats()
	if st.Faults == 0 {
		t.Fatalf("the fixture injected no faults: %+v", st)
	}
	h.checkComplete("public.parcels", extent)
}

func TestHarvestArea(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 4000, CountDefault: 500})
	area := orb.Bound{Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.48, 48.08}}
	res := h.run("typename: gf:parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{Area: &area})
	if res.Status != store.Done {
		t.Fatalf("run %s\n%s", res.Status, tail(h.logs.String()))
	}
	h.checkComplete("public.parcels", area)
	for _, b := range h.fx.Stats().BBoxes {
		if !b.Intersects(area) {
			t.Errorf("requested %v, outside the run's area %v", b, area)
		}
		if b.Min[0] < area.Min[0]-1e-9 || b.Max[0] > area.Max[0]+1e-9 {
			t.Errorf("requested %v, beyond the run's area %v", b, area)
		}
	}
}

func TestHarvestUpsert(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 800, CountDefault: 300})
	keys := "typename: gf:parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: up, mode: upsert, key: [parcel_id]}"
	res := h.run(keys, engine.RunOptions{})
	if res.Status != store.Done || res.Summary.Inserted != 800 {
		t.Fatalf("run %s inserted %d\n%s", res.Status, res.Summary.Inserted, tail(h.logs.String()))
	}
	// Change some rows locally: the next run must put the server's version back.
	testdb.Rows(t, h.dbURL, "UPDATE up SET area_m2 = -1, gf_payload_hash = '\\x00'::bytea || gf_payload_hash WHERE parcel_id < 'GF-00000100'")
	res = h.run(keys, engine.RunOptions{})
	if res.Summary.Updated != 100 || res.Summary.Inserted != 0 {
		t.Errorf("second run: %d updated, %d inserted; want 100 and 0", res.Summary.Updated, res.Summary.Inserted)
	}
	if n := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM up WHERE area_m2 < 0"); n != 0 {
		t.Errorf("%d rows still hold the local change", n)
	}
	h.checkComplete("up", extent)
}

func TestHarvestRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, keys, want string
		setup            string
	}{
		{name: "unknown typename", keys: "typename: nope\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: t1}",
			want: `the server has no feature type "nope"`},
		{name: "incompatible table", setup: "CREATE TABLE t2 (parcel_id integer, geom geometry)",
			keys: "typename: gf:parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: t2}",
			want: `column "parcel_id" is integer, not text`},
		{name: "upsert key not a property", keys: "typename: gf:parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: t3, mode: upsert, key: [nope]}",
			want: `target.key "nope" is not a property`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, wfsserver.Options{Features: 100})
			if tt.setup != "" {
				testdb.Rows(t, h.dbURL, tt.setup)
			}
			res := h.run(tt.keys, engine.RunOptions{})
			msg := res.FailedTasks["parcels"]
			if res.Status != store.Failed || !strings.Contains(msg, tt.want) {
				t.Fatalf("run %s, task error %q; want failure containing %q", res.Status, msg, tt.want)
			}
			if st := h.fx.Stats(); st.GetFeature > 0 {
				t.Errorf("%d GetFeature requests before refusing; want none", st.GetFeature)
			}
		})
	}
}

// TestHarvestPermanentError: a server that answers an exception report for every
// GetFeature fails the unit at once with the server's own words, without retrying.
func TestHarvestPermanentError(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 100})
	var getFeature int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.URL.Query().Get("REQUEST"), "GetFeature") {
			getFeature++
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprint(w, `<?xml version="1.0"?><ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">
<ows:Exception exceptionCode="InvalidParameterValue" locator="bbox"><ows:ExceptionText>Illegal bbox: latitude out of range</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`)
			return
		}
		fx.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h := newHarness(t, wfsserver.Options{Features: 1})
	h.srv = srv
	res := h.run("typename: gf:parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: t}", engine.RunOptions{})
	if res.DeadLetters() != 1 {
		t.Fatalf("dead units = %d, want 1\n%s", res.DeadLetters(), tail(h.logs.String()))
	}
	if !strings.Contains(h.logs.String(), "Illegal bbox: latitude out of range") {
		t.Errorf("the server's message is not in the logs:\n%s", tail(h.logs.String()))
	}
	if getFeature > 2 { // the plan's hits count and the unit's, never a retry
		t.Errorf("%d GetFeature requests; an exception report must not be retried", getFeature)
	}
}

var _ = time.Second
