package ogcapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/testflow"

	"github.com/geoflow/geoflow/flows"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/ogcapi"
	"github.com/geoflow/geoflow/tasks/wfs"
)

const mapserv = "/usr/lib/cgi-bin/mapserv"

// TestMapServer harvests a real MapServer 8 (Debian's cgi-mapserver, run per request as a
// CGI) serving a PostGIS table as OGC API - Features. Debian's 8.0.0 ignores offset on a
// PostGIS layer: every page is the first rows again, numberMatched and the next links look
// right (bench/mapserver/ogcapi.sh shows ogr2ogr storing 1,000 distinct of 5,000). The task
// must store every feature once, with the source's attributes.
func TestMapServer(t *testing.T) {
	if _, err := os.Stat(mapserv); err != nil {
		if os.Getenv("GEOFLOW_REQUIRE_MAPSERVER") == "1" {
			t.Fatalf("GEOFLOW_REQUIRE_MAPSERVER=1 but %s is missing: %v", mapserv, err)
		}
		t.Skipf("%s missing (install cgi-mapserver; make test does): %v", mapserv, err)
	}
	const n = 3000
	h := newHarness(t, wfsserver.Options{Features: n, CountDefault: 1000})

	// The source table, loaded from the sample WFS by geoflow itself, with an integer key.
	src := fmt.Sprintf(`
name: load
tasks:
  load:
    type: wfs
    url: %s/wfs
    typename: gf:parcels
    target: {table: src_load}`, strings.TrimSuffix(h.url, "/ogcapi"))
	reg := &tasks.Registry{}
	reg.Register(wfs.Kind())
	f, err := flows.Parse("load.yaml", []byte(src), flows.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := engine.Run(t.Context(), f, engine.RunOptions{Store: testflow.Stores(h.db), Logger: discard(), HTTP: retry.New(&retry.Options{Logger: discard()})}); err != nil || res.Status != store.Done {
		t.Fatalf("loading the source: %v %v", err, res)
	}
	testdb.Rows(t, h.dbURL, `CREATE TABLE src_parcels AS SELECT substr(parcel_id, 4)::integer AS id, parcel_id, area_m2, land_use, owner_count, surveyed, geom FROM src_load`)
	testdb.Rows(t, h.dbURL, `ALTER TABLE src_parcels ADD PRIMARY KEY (id)`)

	// MapServer over it.
	u, err := url.Parse(h.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	api := srv.URL + "/mapserv/PARCELS/ogcapi"
	conf := filepath.Join(dir, "mapserver.conf")
	write(t, conf, fmt.Sprintf("CONFIG\n  ENV\n    MS_MAP_NO_PATH \"1\"\n  END\n  MAPS\n    PARCELS %q\n  END\nEND\n", filepath.Join(dir, "parcels.map")))
	write(t, filepath.Join(dir, "parcels.map"), fmt.Sprintf(`MAP
  NAME "parcels"
  EXTENT 11.44 48.04 11.56 48.16
  PROJECTION "init=epsg:4326" END
  WEB
    METADATA
      "oga_enable_request" "*"
      "oga_title" "parcels"
      "oga_onlineresource" %q
      "oga_max_limit" "1000"
    END
  END
  LAYER
    NAME "parcels"
    TYPE POLYGON
    STATUS ON
    CONNECTIONTYPE POSTGIS
    CONNECTION "host=%s port=%s dbname=%s user=%s"
    DATA "geom FROM src_parcels USING UNIQUE id USING SRID=4326"
    PROJECTION "init=epsg:4326" END
    TEMPLATE "void"
    METADATA
      "gml_featureid" "id"
      "gml_include_items" "all"
      "gml_types" "auto"
    END
  END
END
`, api, u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), u.User.Username()))
	mux.Handle("/mapserv/", &cgi.Handler{Path: mapserv, Root: "/mapserv", Dir: dir, Env: []string{"MAPSERVER_CONFIG_FILE=" + conf}})

	h.url = api
	res := h.run("collection: parcels\ntarget: {table: harvested}", engine.RunOptions{})
	if res.Status != store.Done {
		t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
	}
	rows := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM harvested")
	distinct := testdb.Int64(t, h.dbURL, "SELECT count(DISTINCT parcel_id) FROM harvested")
	if rows != n || distinct != n {
		t.Fatalf("%d rows, %d distinct parcels; the source has %d\n%s", rows, distinct, n, tail(h.logs.String()))
	}
	// Attributes as in the source (MapServer writes a null as ""), geometry within
	// MapServer's 6 decimals, x = longitude.
	bad := testdb.Int64(t, h.dbURL, `SELECT count(*) FROM harvested g JOIN src_parcels s USING (parcel_id)
		WHERE NULLIF(g.area_m2::text, '')::numeric IS DISTINCT FROM s.area_m2::numeric
		   OR NULLIF(g.land_use, '') IS DISTINCT FROM NULLIF(s.land_use, '')
		   OR NULLIF(g.owner_count::text, '')::bigint IS DISTINCT FROM s.owner_count
		   OR NULLIF(g.surveyed::text, '')::date IS DISTINCT FROM s.surveyed
		   OR ST_HausdorffDistance(g.geom, s.geom) > 2e-6`)
	if bad != 0 {
		t.Errorf("%d parcels differ from the source", bad)
	}
	if !strings.Contains(h.logs.String(), "the server ignores offset") {
		t.Errorf("Debian's MapServer 8.0.0 ignores offset on PostGIS, and the task did not notice:\n%s", tail(h.logs.String()))
	}
	if !strings.Contains(h.logs.String(), "complete: every feature the server counted is stored") {
		t.Errorf("no completeness report:\n%s", tail(h.logs.String()))
	}
	inspectMapServer(t, api, n)
}

// inspectMapServer: what geoflow inspect tells of the real MapServer: the collection, its
// count, its extent in lon/lat (which a swapped bbox misses), and a flow snippet naming it.
func inspectMapServer(t *testing.T, api string, n int64) {
	env := &tasks.Env{Logger: discard(), HTTP: retry.New(&retry.Options{Logger: discard()}), Retry: retry.Policy{MaxAttempts: 2}}
	svc, err := ogcapi.Inspect(t.Context(), env, api)
	if err != nil {
		t.Fatalf("inspecting MapServer: %v", err)
	}
	l, err := svc.FindLayer("parcels")
	if err != nil {
		t.Fatalf("inspect found no collection parcels: %v (%+v)", err, svc.Layers)
	}
	if l.Count != n || l.Extent == nil || !l.Extent.Contains(orb.Point{11.5, 48.1}) || len(l.Fields) == 0 {
		t.Errorf("collection parcels: count %d, extent %v, %d fields; want %d, around 11.5 48.1, the table's fields", l.Count, l.Extent, len(l.Fields), n)
	}
	swapped := orb.Bound{Min: orb.Point{48.06, 11.46}, Max: orb.Point{48.10, 11.5}}
	if err := tasks.CheckExtent(l.Name, swapped, *l.Extent); err == nil || !strings.Contains(err.Error(), "swapped?") {
		t.Errorf("a swapped bbox against MapServer's extent: %v", err)
	}
	snip, err := ogcapi.Snippet(svc, "parcels")
	if err != nil || !strings.Contains(snip, "collection: parcels") {
		t.Errorf("snippet: %v\n%s", err, snip)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
