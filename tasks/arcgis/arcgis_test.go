package arcgis_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/internal/testflow"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/postgis"
	"github.com/geoflow/geoflow/tasks/arcgis"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type harness struct {
	t     *testing.T
	fx    *arcgisserver.Server
	url   string
	dbURL string
	db    *postgis.Store
	logs  *bytes.Buffer
}

func newHarness(t *testing.T, opts arcgisserver.Options) *harness {
	t.Helper()
	fx := arcgisserver.New(opts)
	srv := httptest.NewServer(fx)
	t.Cleanup(srv.Close)
	dbURL := testdb.URL(t)
	db, err := postgis.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &harness{t: t, fx: fx, url: srv.URL + "/arcgis/rest/services/Parcels/FeatureServer/0", dbURL: dbURL, db: db, logs: &bytes.Buffer{}}
}

func (h *harness) run(taskYAML string, opts engine.RunOptions) *engine.Result {
	h.t.Helper()
	return testflow.Run(h.t, arcgis.Kind(), h.url, taskYAML, h.db, h.logs, opts)
}

func tail(s string) string { return testflow.Tail(s) }

// checkEqual asserts the table holds every parcel once, geometry equal to the source
// (polygons with holes and multipart polygons included) and attributes as served, dates
// made timestamps.
func (h *harness) checkEqual(table string) {
	h.t.Helper()
	n := h.fx.Len()
	rows := testdb.Int64(h.t, h.dbURL, "SELECT count(*) FROM "+table)
	distinct := testdb.Int64(h.t, h.dbURL, "SELECT count(DISTINCT objectid) FROM "+table)
	if rows != int64(n) || distinct != rows {
		h.t.Fatalf("%s: %d rows, %d distinct object ids; the server has %d\n%s", table, rows, distinct, n, tail(h.logs.String()))
	}
	// The source, in one statement: a table of what the server holds.
	var b strings.Builder
	b.WriteString("CREATE TABLE src_" + table + " AS SELECT * FROM (VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		a := h.fx.Attributes(i)
		fmt.Fprintf(&b, "(%d, ST_GeomFromText('%s', 4326), '%s', %v::bigint)", i+1, wktOf(h.fx.Parcel(i).Geometry), a["parcel_id"], a["updated_at"])
	}
	b.WriteString(") AS v(objectid, geom, parcel_id, updated_ms)")
	testdb.Rows(h.t, h.dbURL, b.String())
	r := testdb.Rows(h.t, h.dbURL, `SELECT
		count(*) FILTER (WHERE ST_HausdorffDistance(g.geom, s.geom) > 1e-9),
		count(*) FILTER (WHERE g.parcel_id IS DISTINCT FROM s.parcel_id OR (extract(epoch FROM g.updated_at) * 1000)::bigint IS DISTINCT FROM s.updated_ms),
		count(*) FILTER (WHERE ST_NumInteriorRings(ST_GeometryN(s.geom, 1)) > 0),
		count(*) FILTER (WHERE ST_NumGeometries(s.geom) > 1),
		count(*)
		FROM `+table+` g JOIN src_`+table+` s USING (objectid)`)[0]
	geomDiff, attrDiff, holes, multi, joined := r[0].(int64), r[1].(int64), r[2].(int64), r[3].(int64), r[4].(int64)
	h.t.Logf("%d parcels compared: %d with holes, %d multipart; %d geometries and %d attribute rows differ", joined, holes, multi, geomDiff, attrDiff)
	if joined != int64(n) || geomDiff != 0 || attrDiff != 0 {
		h.t.Errorf("%d of %d parcels compared; %d geometries (Hausdorff > 1e-9) and %d attribute rows differ from the source", joined, n, geomDiff, attrDiff)
	}
	if holes == 0 || multi == 0 {
		h.t.Errorf("the sample held %d polygons with holes and %d multipart ones: the ring grouping is not exercised", holes, multi)
	}
}

func TestHarvest(t *testing.T) {
	tests := []struct {
		name string
		opts arcgisserver.Options
		keys string
	}{
		{name: "defaults", opts: arcgisserver.Options{Features: 1500, MaxRecordCount: 200}},
		{name: "id list capped, faults, errors with 200", opts: arcgisserver.Options{Features: 3000, MaxRecordCount: 1000, MaxIDs: 500,
			Faults: arcgisserver.Faults{Rate5xx: 0.02, RateError200: 0.02, RateTruncate: 0.01}}},
		{name: "batch below maxRecordCount", opts: arcgisserver.Options{Features: 800, MaxRecordCount: 1000}, keys: "batch_size: 150"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			keys := "target: {table: parcels}\n" + tt.keys
			res := h.run(keys, engine.RunOptions{})
			if res.Status != store.Done || res.DeadLetters() != 0 {
				t.Fatalf("run %s, %d dead: %v\n%s", res.Status, res.DeadLetters(), res.FailedTasks, tail(h.logs.String()))
			}
			h.checkEqual("parcels")
			if !strings.Contains(h.logs.String(), "complete: every feature the server counted is stored") {
				t.Errorf("no completeness report:\n%s", tail(h.logs.String()))
			}
			st := h.fx.Stats()
			t.Logf("%+v", st)
			if tt.opts.MaxIDs > 0 && st.IDQueries < 4 {
				t.Errorf("%d id queries: the capped list was not split", st.IDQueries)
			}
		})
	}
}

// TestToken: the token goes in a header; a wrong one fails the task at once with the
// server's words, and neither it nor the right one reaches the logs.
func TestToken(t *testing.T) {
	h := newHarness(t, arcgisserver.Options{Features: 300, Token: "s3cret-tok3n"})
	t.Setenv("GF_TEST_TOKEN", "wrong-tok3n")
	res := h.run("token_env: GF_TEST_TOKEN\ntarget: {table: parcels}", engine.RunOptions{})
	if res.Status != store.Failed || !strings.Contains(res.FailedTasks["parcels"], "Invalid Token") {
		t.Fatalf("run %s: %v", res.Status, res.FailedTasks)
	}
	if st := h.fx.Stats(); st.TokenErrors != 1 {
		t.Errorf("%d requests refused for the token; a 498 must not be retried", st.TokenErrors)
	}
	t.Setenv("GF_TEST_TOKEN", "s3cret-tok3n")
	res = h.run("token_env: GF_TEST_TOKEN\ntarget: {table: parcels}", engine.RunOptions{})
	if res.Status != store.Done {
		t.Fatalf("run %s: %v\n%s", res.Status, res.FailedTasks, tail(h.logs.String()))
	}
	if strings.Contains(h.logs.String(), "tok3n") {
		t.Errorf("a token reached the logs:\n%s", tail(h.logs.String()))
	}
}

// TestVanishedIDs: ids listed but never answered (deleted since the listing), by a server
// that flags every answer exceededTransferLimit: the batch asks once more for the rest,
// then stops, and the run ends with the rest stored.
func TestVanishedIDs(t *testing.T) {
	gone := func(id int) bool { return id%97 == 0 }
	h := newHarness(t, arcgisserver.Options{Features: 1000, MaxRecordCount: 200, Vanished: gone, AlwaysExceeded: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan *engine.Result, 1)
	go func() { done <- h.run("target: {table: parcels}", engine.RunOptions{}) }()
	var res *engine.Result
	select {
	case res = <-done:
	case <-ctx.Done():
		t.Fatalf("the run did not end: a batch keeps planning itself\n%s", tail(h.logs.String()))
	}
	want := int64(1000 - 1000/97)
	if rows := testdb.Int64(t, h.dbURL, "SELECT count(*) FROM parcels"); rows != want {
		t.Errorf("%d rows, want %d", rows, want)
	}
	if res.DeadLetters() != 0 || !strings.Contains(h.logs.String(), "not answered") {
		t.Errorf("run %s, %d dead; the ids not answered are not reported\n%s", res.Status, res.DeadLetters(), tail(h.logs.String()))
	}
	if st := h.fx.Stats(); st.FeatureQueries > 15 {
		t.Errorf("%d feature queries for 5 batches: the rest was asked for more than once", st.FeatureQueries)
	}
}
