package ogcapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks/ogcapi"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var extent = orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}

// harness is the sample server's OGC API - Features, one database, and a way to run a
// one-task flow against them.
type harness struct {
	t     *testing.T
	fx    *wfsserver.Server
	url   string // the landing page
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
	return &harness{t: t, fx: fx, url: srv.URL + "/ogcapi", dbURL: dbURL, db: db, logs: &bytes.Buffer{}}
}

func (h *harness) run(taskYAML string, opts engine.RunOptions) *engine.Result {
	h.t.Helper()
	return testflow.Run(h.t, ogcapi.Kind(), h.url, taskYAML, h.db, h.logs, opts)
}

func tail(s string) string { return testflow.Tail(s) }

// checkComplete asserts the table holds exactly the fixture's features in b, once each,
// with their properties and x = longitude.
func (h *harness) checkComplete(table string, b orb.Bound) {
	h.t.Helper()
	want := h.fx.FeaturesIn(b)
	rows := testdb.Int64(h.t, h.dbURL, "SELECT count(*) FROM "+table)
	distinct := testdb.Int64(h.t, h.dbURL, "SELECT count(DISTINCT gf_feature_id) FROM "+table)
	if rows != int64(len(want)) || distinct != rows {
		h.t.Fatalf("%s: %d rows, %d distinct; the server has %d features in the box\nlogs:\n%s", table, rows, distinct, len(want), tail(h.logs.String()))
	}
	for k := 0; k < len(want); k += max(1, len(want)/20) {
		f := h.fx.Feature(want[k])
		got := testdb.Rows(h.t, h.dbURL, `SELECT parcel_id, area_m2::float8, ST_X(ST_PointN(ST_ExteriorRing(ST_GeometryN(geom, 1)), 1)),
			ST_Y(ST_PointN(ST_ExteriorRing(ST_GeometryN(geom, 1)), 1)) FROM `+table+` WHERE gf_feature_id = $1`, f.ID)
		if len(got) != 1 {
			h.t.Fatalf("feature %s: %d rows", f.ID, len(got))
		}
		r := got[0]
		if r[0] != f.Properties["parcel_id"] || fmt.Sprint(r[1]) != fmt.Sprint(f.Properties["area_m2"]) {
			h.t.Errorf("feature %s: stored %v %v, served %v %v", f.ID, r[0], r[1], f.Properties["parcel_id"], f.Properties["area_m2"])
		}
		first := firstVertex(f.Geometry)
		if x, y := r[2].(float64), r[3].(float64); math.Abs(x-first[0]) > 1e-7 || math.Abs(y-first[1]) > 1e-7 {
			h.t.Errorf("feature %s: first vertex stored (%v %v), served (%v %v)", f.ID, x, y, first[0], first[1])
		}
	}
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

// walkNextLinks does what a client that trusts next links does (ogr2ogr OAPIF:): it
// follows rel=next from the first page to the end, and returns the features received and
// how many were distinct.
func walkNextLinks(t *testing.T, first string) (received, distinct int) {
	t.Helper()
	seen := map[string]bool{}
	for u := first; u != ""; {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Features []struct {
				ID any `json:"id"`
			} `json:"features"`
			Links []struct{ Rel, Href string } `json:"links"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page.Features {
			received++
			seen[fmt.Sprint(f.ID)] = true
		}
		u = ""
		for _, l := range page.Links {
			if l.Rel == "next" {
				u = l.Href
			}
		}
	}
	return received, len(seen)
}

// TestHarvestComplete: against a server whose order changes from request to request
// (MapServer over a parallel-scan PostgreSQL), walking the next links stores duplicates
// and misses features; the task tiles instead and stores every feature once.
func TestHarvestComplete(t *testing.T) {
	tests := []struct {
		name string
		opts wfsserver.Options
		keys string
	}{
		{name: "unstable order", opts: wfsserver.Options{Features: 4000, CountDefault: 500, UnstableOrder: true}},
		{name: "no numberMatched", opts: wfsserver.Options{Features: 2000, CountDefault: 300, SkipNumberMatched: true}},
		{name: "page_size above the server's maximum", opts: wfsserver.Options{Features: 2000, CountDefault: 250}, keys: "page_size: 5000"},
		{name: "extent from the collection", opts: wfsserver.Options{Features: 1500, CountDefault: 400}, keys: "bbox: null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			keys := "collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: public.parcels}"
			if tt.keys != "" {
				keys = strings.Replace(keys, "bbox: [11.45, 48.05, 11.55, 48.15]", tt.keys, 1)
			}
			res := h.run(keys, engine.RunOptions{})
			if res.Status != store.Done {
				t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
			}
			h.checkComplete("public.parcels", extent)
			if !tt.opts.SkipNumberMatched && !strings.Contains(h.logs.String(), "complete: every feature the server counted is stored") {
				t.Errorf("no completeness report in the logs:\n%s", tail(h.logs.String()))
			}
			if strings.Contains(tt.keys, "page_size") && !strings.Contains(h.logs.String(), "maximum=250") {
				t.Errorf("the OpenAPI document's limit maximum was not taken:\n%s", tail(h.logs.String()))
			}
			if tt.opts.UnstableOrder {
				got, distinct := walkNextLinks(t, h.url+"/collections/parcels/items?f=json&limit=500")
				t.Logf("walking next links: %d features received, %d distinct, of %d", got, distinct, h.fx.Len())
				if distinct >= h.fx.Len() {
					t.Errorf("the fixture's paging is not broken: next links gave %d distinct of %d", distinct, h.fx.Len())
				}
			}
			// A rerun stores nothing new.
			res2 := h.run(keys, engine.RunOptions{})
			if res2.Summary.Inserted != 0 {
				t.Errorf("rerun inserted %d", res2.Summary.Inserted)
			}
		})
	}
}

// TestHarvestFaults: cut-off bodies and proxy pages on a sixth of the requests: every
// feature still lands once.
func TestHarvestFaults(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 2000, CountDefault: 250, Faults: wfsserver.Faults{
		Rate5xx: 0.06, RateTruncate: 0.08, RateHTML200: 0.04, Seed: 7}})
	res := h.run("collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{})
	if res.Status != store.Done || res.DeadLetters() != 0 {
		t.Fatalf("run %s with %d dead units\n%s", res.Status, res.DeadLetters(), tail(h.logs.String()))
	}
	if h.fx.Stats().Faults == 0 {
		t.Fatal("the fixture injected no faults")
	}
	h.checkComplete("public.parcels", extent)
}

// TestHarvestArea: a --bbox rerun asks only for the run's area.
func TestHarvestArea(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 3000, CountDefault: 400})
	area := orb.Bound{Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.48, 48.08}}
	res := h.run("collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{Area: &area})
	if res.Status != store.Done {
		t.Fatalf("run %s\n%s", res.Status, tail(h.logs.String()))
	}
	h.checkComplete("public.parcels", area)
	for _, b := range h.fx.Stats().BBoxes {
		if b.Min[0] < area.Min[0]-1e-9 || b.Max[0] > area.Max[0]+1e-9 || b.Min[1] < area.Min[1]-1e-9 || b.Max[1] > area.Max[1]+1e-9 {
			t.Errorf("requested %v, beyond the run's area %v", b, area)
		}
	}
}

// TestRefusesWhatTheServerCannotDo: a filter on a server without CQL2, a CRS it does not
// serve, a collection it does not have: the task fails before asking for any feature,
// saying why.
func TestRefusesWhatTheServerCannotDo(t *testing.T) {
	tests := []struct{ name, keys, want string }{
		{name: "filter without Part 3", keys: "filter: \"land_use = 'residential'\"", want: "does not declare the Features Part 3 filter"},
		{name: "crs without Part 2", keys: "crs: EPSG:25832", want: "does not declare Features Part 2"},
		{name: "unknown collection", keys: "collection: roads", want: `collection "roads"`},
		{name: "upsert key not a property", keys: "target: {table: t3, mode: upsert, key: [nope]}", want: `target.key "nope" is not a property`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, wfsserver.Options{Features: 100})
			keys := "collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: t}"
			for _, k := range []string{"collection:", "target:"} {
				if strings.HasPrefix(tt.keys, k) {
					for _, l := range strings.Split(keys, "\n") {
						if strings.HasPrefix(l, k) {
							keys = strings.Replace(keys, l, tt.keys, 1)
						}
					}
				}
			}
			if !strings.HasPrefix(tt.keys, "collection:") && !strings.HasPrefix(tt.keys, "target:") {
				keys += "\n" + tt.keys
			}
			res := h.run(keys, engine.RunOptions{})
			msg := res.FailedTasks["parcels"]
			if res.Status != store.Failed || !strings.Contains(msg, tt.want) {
				t.Fatalf("run %s, task error %q; want failure containing %q\n%s", res.Status, msg, tt.want, tail(h.logs.String()))
			}
			if st := h.fx.Stats(); st.GetFeature > 1 { // the sample that lays out the columns, at most
				t.Errorf("%d items requests before refusing", st.GetFeature)
			}
		})
	}
}

// TestServerQuirks: Part 2 asked for EPSG:4326 (latitude first, swapped back to x =
// longitude), and a server that ignores offset (MapServer 8.0.0 on PostGIS), which the
// task detects and stops paging on.
func TestServerQuirks(t *testing.T) {
	t.Run("crs EPSG:4326 latitude first", func(t *testing.T) {
		h := newHarness(t, wfsserver.Options{Features: 1500, CountDefault: 400, OGCAPICRS: true})
		res := h.run("collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ncrs: http://www.opengis.net/def/crs/EPSG/0/4326\ntarget: {table: parcels}", engine.RunOptions{})
		if res.Status != store.Done {
			t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
		}
		h.checkComplete("public.parcels", extent)
	})
	for _, tc := range []struct {
		name string
		opts wfsserver.Options
	}{
		// A page capped below the limit asked for, unannounced, on a server that cannot
		// page: a tile short of its count is split, not probed at an offset.
		{name: "pages capped, offset ignored", opts: wfsserver.Options{Features: 1500, CountDefault: 400, PageCap: 150, OGCAPIIgnoreOffset: true}},
		// The same cap without numberMatched: the short page's next link says it.
		{name: "pages capped, no numberMatched", opts: wfsserver.Options{Features: 1500, CountDefault: 400, PageCap: 150, SkipNumberMatched: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts)
			res := h.run("collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{})
			if res.Status != store.Done {
				t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
			}
			h.checkComplete("public.parcels", extent)
		})
	}
	t.Run("offset ignored", func(t *testing.T) {
		h := newHarness(t, wfsserver.Options{Features: 1500, CountDefault: 400, OGCAPIIgnoreOffset: true})
		res := h.run("collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{})
		if res.Status != store.Done {
			t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
		}
		h.checkComplete("public.parcels", extent)
		if !strings.Contains(h.logs.String(), "the server ignores offset") || !strings.Contains(h.logs.String(), "paging=none") {
			t.Errorf("the ignored offset was not detected:\n%s", tail(h.logs.String()))
		}
		got, distinct := walkNextLinks(t, h.url+"/collections/parcels/items?f=json&limit=400")
		t.Logf("walking next links: %d received, %d distinct", got, distinct)
		if distinct != 400 {
			t.Errorf("the fixture does not repeat its first page: %d distinct", distinct)
		}
	})
}

// TestAPIKeyInURL: a key in the landing page's URL reaches every request, though the links
// in the server's documents carry none.
func TestAPIKeyInURL(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 800, CountDefault: 300})
	keyed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("key") != "k3y" {
			http.Error(w, `{"code":"Unauthorized","description":"missing API key"}`, http.StatusUnauthorized)
			return
		}
		q := r.URL.Query() // a gateway in front of the server checks the key and drops it
		q.Del("key")
		r.URL.RawQuery = q.Encode()
		h.fx.ServeHTTP(w, r)
	}))
	t.Cleanup(keyed.Close)
	h.url = keyed.URL + "/ogcapi?key=k3y"
	res := h.run("collection: parcels\nbbox: [11.45, 48.05, 11.55, 48.15]\ntarget: {table: parcels}", engine.RunOptions{})
	if res.Status != store.Done {
		t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
	}
	h.checkComplete("public.parcels", extent)
	if strings.Contains(h.logs.String(), "k3y") {
		t.Errorf("the key reached the logs")
	}
}
