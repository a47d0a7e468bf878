package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// TestUnclosedRingIsRejected: a server that sends one polygon with an unclosed ring
// among 7 features failed the whole unit in PostGIS, as a database fault (0 of 7
// stored), and a GeoPackage stored the ring as it came. Now, from WFS and from OGC API,
// into either store, the other 6 are stored and the unit is a dead letter of class
// rejected naming the feature and what is wrong with it: exit 2.
func TestUnclosedRingIsRejected(t *testing.T) {
	eachStore(t, func(t *testing.T, db string) {
		for _, kind := range []string{"wfs", "ogcapi_features"} {
			t.Run(kind, func(t *testing.T) { testUnclosedRingIsRejected(t, db, kind) })
		}
	})
}

func testUnclosedRingIsRejected(t *testing.T, db, kind string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	fx := wfsserver.New(wfsserver.Options{Features: 7, ImplementsSorting: true})
	bad := fx.Feature(3).ID
	srv := httptest.NewServer(unclosing(t, fx, bad))
	t.Cleanup(srv.Close)
	table := "rings_" + strings.TrimSuffix(kind, "_features")
	source := fmt.Sprintf("type: wfs\n    url: %s/wfs\n    typename: gf:parcels\n    output_format: geojson", srv.URL)
	if kind == "ogcapi_features" {
		source = fmt.Sprintf("type: ogcapi_features\n    url: %s/ogcapi\n    collection: parcels", srv.URL)
	}
	flow := writeFlow(t, fmt.Sprintf(`
name: %s
defaults:
  retry: {max_attempts: 2, base_delay: 5ms, max_delay: 20ms}
tasks:
  parcels:
    %s
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: public.%s}
`, table, source, table))

	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error")
	stored := int64(-1)
	if tableExists(t, db, table) {
		stored = testdb.Count(t, db, "SELECT count(*) FROM "+table)
	}
	entries := listJSON(t, env, "--flow", table)
	var classes []string
	for _, e := range entries {
		classes = append(classes, e.ErrorClass)
		t.Logf("dead letter %s: %s", e.ErrorClass, e.Error)
	}
	t.Logf("exit %d, %d of 7 stored, dead letters %v", code, stored, classes)

	if code != cli.ExitDeadLetters {
		t.Errorf("run: exit %d, want %d (a feature refused)\n%s%s", code, cli.ExitDeadLetters, out, errs)
	}
	if stored != 6 {
		t.Errorf("%d features stored, want the 6 valid ones", stored)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM "+table+" WHERE gf_feature_id = '"+bad+"'"); n != 0 {
		t.Errorf("the feature with the unclosed ring was stored (%d rows)", n)
	}
	if len(entries) != 1 {
		t.Fatalf("%d dead letters %v, want 1", len(entries), classes)
	}
	e := entries[0]
	if e.ErrorClass != "rejected" {
		t.Errorf("dead letter of class %q, want rejected: %s", e.ErrorClass, e.Error)
	}
	for _, want := range []string{"1 feature of the response refused", `"` + bad + `"`, "polygon ring 0 is not closed (first "} {
		if !strings.Contains(e.Error, want) {
			t.Errorf("dead letter %q does not say %q", e.Error, want)
		}
	}
	if !strings.Contains(out, "1 dead letter (1 rejected)") {
		t.Errorf("the summary does not give the dead letter by class:\n%s", out)
	}
}

// unclosing serves fx, with the exterior ring of feature id cut short of its closing
// point in every GeoJSON answer that holds it, as a server that truncates coordinate
// lists does.
func unclosing(t *testing.T, fx *wfsserver.Server, id string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		fx.ServeHTTP(rec, r)
		var doc map[string]json.RawMessage
		var feats []map[string]json.RawMessage
		if json.Unmarshal(rec.Body.Bytes(), &doc) != nil || json.Unmarshal(doc["features"], &feats) != nil {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		for _, f := range feats {
			var fid string
			if json.Unmarshal(f["id"], &fid) != nil || fid != id {
				continue
			}
			var g struct {
				Type        string          `json:"type"`
				Coordinates json.RawMessage `json:"coordinates"`
			}
			if err := json.Unmarshal(f["geometry"], &g); err != nil {
				t.Errorf("feature %s: %v", id, err)
				continue
			}
			var rings [][][]float64
			switch g.Type {
			case "Polygon":
				json.Unmarshal(g.Coordinates, &rings)
			case "MultiPolygon":
				var polys [][][][]float64
				json.Unmarshal(g.Coordinates, &polys)
				rings = polys[0]
			}
			if len(rings) == 0 || len(rings[0]) < 5 {
				t.Errorf("feature %s: a %s the test cannot cut short: %s", id, g.Type, g.Coordinates)
				continue
			}
			rings = [][][]float64{rings[0][:len(rings[0])-1]}
			f["geometry"], _ = json.Marshal(map[string]any{"type": "Polygon", "coordinates": rings})
		}
		doc["features"], _ = json.Marshal(feats)
		body, _ := json.Marshal(doc)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.Header().Del("ETag")
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}
