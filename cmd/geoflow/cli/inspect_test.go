package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/tasks"
)

// inspectFixture is one sample server, the URL geoflow inspect is given, and the layer
// a flow is asked for.
type inspectFixture struct {
	name, url, layer, table string
}

// inspectFixtures starts the sample WFS (with its OGC API) and the ArcGIS emulator, the
// WFS with a quota whose headers inspect reports.
func inspectFixtures(t *testing.T, n int) []inspectFixture {
	wfsSrv := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: n, CountDefault: 300, ImplementsSorting: true,
		Quota: &wfsserver.Quota{Limit: 1000, Window: time.Minute}}))
	t.Cleanup(wfsSrv.Close)
	arcSrv := httptest.NewServer(arcgisserver.New(arcgisserver.Options{Features: n, MaxRecordCount: 300}))
	t.Cleanup(arcSrv.Close)
	return []inspectFixture{
		{name: "wfs", url: wfsSrv.URL + "/wfs", layer: "gf:parcels", table: "parcels"},
		{name: "ogcapi", url: wfsSrv.URL + "/ogcapi", layer: "parcels", table: "parcels"},
		{name: "arcgis", url: arcSrv.URL + "/arcgis/rest/services/Parcels/FeatureServer", layer: "0", table: "parcels"},
	}
}

// TestInspect: each sample server is recognised without being told its kind, and
// described in lines that fit 80 columns, its layer with its count; --json is the whole
// description.
func TestInspect(t *testing.T) {
	for _, fx := range inspectFixtures(t, 700) {
		t.Run(fx.name, func(t *testing.T) {
			code, out, errs := geoflow(t, nil, "inspect", fx.url)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
			for _, line := range strings.Split(out, "\n") {
				if len([]rune(line)) > 80 {
					t.Errorf("line longer than 80 columns: %q", line)
				}
			}
			if !strings.Contains(out, fx.layer) || !strings.Contains(out, " 700 ") {
				t.Errorf("the layer and its count are missing:\n%s", out)
			}
			if fx.name == "wfs" && !strings.Contains(out, "X-RateLimit-Limit: 1000") {
				t.Errorf("the quota headers are missing:\n%s", out)
			}
			t.Logf("\n%s", out)
			code, out, _ = geoflow(t, nil, "inspect", "--json", fx.url)
			var s tasks.Service
			if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil || len(s.Layers) != 1 || s.Layers[0].Count != 700 {
				t.Errorf("--json: exit %d, %v, %+v", code, err, s)
			}
		})
	}
}

// TestInspectFlowRuns: the flow inspect --flow writes validates and runs as it is, and
// stores as many features as inspect counted.
func TestInspectFlowRuns(t *testing.T) {
	for _, fx := range inspectFixtures(t, 900) {
		t.Run(fx.name, func(t *testing.T) {
			code, out, errs := geoflow(t, nil, "inspect", "--json", "--layer", fx.layer, fx.url)
			var s tasks.Service
			if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
				t.Fatalf("exit %d, %v\n%s", code, err, errs)
			}
			l, err := s.FindLayer(fx.layer)
			if err != nil || l.Count <= 0 {
				t.Fatalf("%v, %+v", err, l)
			}
			code, flow, errs := geoflow(t, nil, "inspect", "--flow", fx.layer, fx.url)
			if code != 0 {
				t.Fatalf("--flow: exit %d\n%s", code, errs)
			}
			path := filepath.Join(t.TempDir(), "f.yaml")
			if err := os.WriteFile(path, []byte(flow), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := geoflow(t, nil, "validate", path); code != 0 {
				t.Fatalf("validate: exit %d\n%s%s\n%s", code, out, errs, flow)
			}
			db := filepath.Join(t.TempDir(), "x.gpkg")
			if code, out, errs := geoflow(t, nil, "run", path, "--database", db, "--progress", "off", "--log-level", "warn"); code != 0 {
				t.Fatalf("run: exit %d\n%s%s\n%s", code, out, errs, flow)
			}
			if n := testdb.Count(t, db, "SELECT count(DISTINCT gf_feature_id) FROM "+fx.table); n != l.Count {
				t.Errorf("stored %d features, inspect counted %d\n%s", n, l.Count, flow)
			}
		})
	}
}

// TestInspectNoService: a URL no kind speaks says what each found there, and a key in it
// never shows.
func TestInspectNoService(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	code, out, errs := geoflow(t, nil, "inspect", srv.URL+"/nothing?apikey=hunter2")
	if code != 1 || !strings.Contains(errs, "speaks none of the protocols") || !strings.Contains(errs, "wfs:") ||
		!strings.Contains(errs, "ogcapi_features:") || strings.Contains(out+errs, "hunter2") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}

// TestSwappedBBoxRefusedAtPlanning: a flow whose bbox has longitude and latitude swapped
// stored nothing and reported complete. validate --online refuses it at the bbox's line,
// and the run fails at planning, both naming the layer's advertised extent and the likely
// mistake.
func TestSwappedBBoxRefusedAtPlanning(t *testing.T) {
	fx := wfsserver.New(wfsserver.Options{Features: 100})
	srv := httptest.NewServer(fx)
	defer srv.Close()
	flow := writeFlow(t, `name: swapped
tasks:
  parcels:
    type: wfs
    url: `+srv.URL+`/wfs
    typename: gf:parcels
    bbox: [48.06, 11.46, 48.10, 11.5]
    target: {table: parcels}
`)
	code, out, errs := geoflow(t, nil, "validate", "--online", flow)
	if want := `flow.yaml:7:5: task "parcels": bbox: bbox 48.06,11.46,48.1,11.5 does not meet the extent of layer "gf:parcels", 11.4`; code != 1 || !strings.Contains(out+errs, want) || !strings.Contains(out+errs, "swapped?") {
		t.Fatalf("validate --online: exit %d, want 1 and %q\n%s%s", code, want, out, errs)
	}
	db := filepath.Join(t.TempDir(), "x.gpkg")
	code, out, errs = geoflow(t, nil, "run", flow, "--database", db, "--progress", "off", "--log-level", "error")
	all := out + errs
	if code == 0 || !strings.Contains(all, `does not meet the extent of layer "gf:parcels", 11.4`) || !strings.Contains(all, "longitude and latitude swapped?") {
		t.Fatalf("exit %d; want the run refused naming the extent\n%s", code, all)
	}
	if st := fx.Stats(); st.GetFeature+st.Hits != 0 {
		t.Errorf("%d feature and %d count requests", st.GetFeature, st.Hits)
	}
	t.Logf("exit %d\n%s", code, all)
}
