package arcgis_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// TestInvalidGeometryRejected: an ArcGIS layer whose answers hold a ring collapsed to two
// places and a ring left open stores the other features; the batch is a rejected dead
// letter naming both and what is wrong with each. The Esri JSON reader closed the open
// ring itself, and the collapsed one was stored.
func TestInvalidGeometryRejected(t *testing.T) {
	fx := arcgisserver.New(arcgisserver.Options{Features: 30, MaxRecordCount: 1000})
	bad := map[float64]string{ // OBJECTID: its rings
		4: `[[[11.47,48.07],[11.471,48.071],[11.47,48.07],[11.47,48.07]]]`,
		7: `[[[11.48,48.08],[11.481,48.08],[11.481,48.081],[11.48,48.081]]]`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		fx.ServeHTTP(rec, r)
		var doc map[string]json.RawMessage
		var feats []map[string]json.RawMessage
		if json.Unmarshal(rec.Body.Bytes(), &doc) != nil || json.Unmarshal(doc["features"], &feats) != nil {
			w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		for _, f := range feats {
			var a struct{ OBJECTID float64 }
			if json.Unmarshal(f["attributes"], &a) == nil && bad[a.OBJECTID] != "" && f["geometry"] != nil {
				f["geometry"] = json.RawMessage(`{"rings":` + bad[a.OBJECTID] + `}`)
			}
		}
		doc["features"], _ = json.Marshal(feats)
		body, _ := json.Marshal(doc)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t, arcgisserver.Options{Features: 1})
	h.fx, h.url = fx, srv.URL+"/arcgis/rest/services/Parcels/FeatureServer/0"

	res := h.run("target: {table: parcels}", engine.RunOptions{})
	if res.DeadLetters() != 1 || res.DeadByClass[dlq.ClassRejected] != 1 {
		t.Fatalf("run %s, %d dead %v; want one rejected dead letter\n%s", res.Status, res.DeadLetters(), res.DeadByClass, tail(h.logs.String()))
	}
	if n := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM parcels"); n != 28 {
		t.Errorf("%d rows, want the 28 valid features", n)
	}
	open, err := h.db.ListDeadLetters(context.Background(), dlq.Filter{Status: dlq.StatusOpen})
	if err != nil || len(open) != 1 {
		t.Fatalf("%d open dead letters (%v), want 1", len(open), err)
	}
	t.Logf("dead letter: %s", open[0].Error)
	for _, want := range []string{"2 features of the response refused", `"4"`, "polygon ring 0 has 2 distinct points, fewer than 3",
		`"7"`, "ring 0 is not closed (first 11.48,48.08 last 11.48,48.081)"} {
		if !strings.Contains(open[0].Error, want) {
			t.Errorf("dead letter %q does not say %q", open[0].Error, want)
		}
	}
}
