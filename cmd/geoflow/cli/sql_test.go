package cli_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/geoflow/geoflow/cmd/geoflow/cli"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// sqlFlow writes a flow that harvests the dev WFS's parcels, then runs the SQL step
// by_zoning from sql/step.sql (script), and returns the flow's path and the script's.
func sqlFlow(t *testing.T, url, script string) (flow, sqlFile string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	sqlFile = filepath.Join(dir, "sql", "step.sql")
	if err := os.WriteFile(sqlFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	flow = filepath.Join(dir, "flow.yaml")
	src := `name: zoning
defaults:
  retry: {max_attempts: 2, base_delay: 1ms, max_delay: 5ms}
tasks:
  parcels:
    type: wfs
    url: ` + url + `
    typename: gf:parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    target: {table: parcels}
  by_zoning:
    type: sql
    depends_on: [parcels]
    file: sql/step.sql
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return flow, sqlFile
}

func wfsURL(t *testing.T, features int) string {
	t.Helper()
	srv := httptest.NewServer(wfsserver.New(wfsserver.Options{Features: features, CountDefault: 200, ImplementsSorting: true}))
	t.Cleanup(srv.Close)
	return srv.URL + "/wfs"
}

// TestSQLStep: a flow harvests parcels, then a SQL step summarises them by zone: on
// PostGIS a dissolve with ST_Union and ST_Area (CREATE TABLE ... AS, with parameters), on
// a GeoPackage plain SQL. The rows it affected are shown by the run and by runs show.
func TestSQLStep(t *testing.T) { eachStore(t, testSQLStep) }

func testSQLStep(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	script := `-- the summary, made again from scratch
drop table if exists zoning_summary;
create table zoning_summary as
  select zone, count(*) as n, ST_Multi(ST_Union(geom)) as geom, sum(ST_Area(geom::geography)) as area_m2,
         @run_id as run_id, @flow as flow, @parcels_table as source
  from parcels group by zone;
`
	if testdb.IsGeoPackage(db) {
		script = `drop table if exists zoning_summary;
create table zoning_summary (zone text, n integer, run_id integer, flow text, source text);
insert into zoning_summary select zone, count(*), @run_id, @flow, @parcels_table from parcels group by zone;
`
	}
	flow, _ := sqlFlow(t, wfsURL(t, 500), script)
	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "warn")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	zones := testdb.Count(t, db, "SELECT count(DISTINCT coalesce(zone, '<null>')) FROM parcels")
	if zones < 2 {
		t.Fatalf("%d zones in the parcels, want several", zones)
	}
	source := "parcels"
	if !testdb.IsGeoPackage(db) {
		source = "public.parcels"
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM zoning_summary WHERE run_id = 1 AND flow = 'zoning' AND source = '"+source+"'"); n != zones {
		t.Errorf("zoning_summary holds %d rows of run 1, want one per zone (%d)", n, zones)
	}
	if n := testdb.Count(t, db, "SELECT CAST(sum(n) AS bigint) FROM zoning_summary"); n != 500 {
		t.Errorf("zoning_summary counts %d parcels, want 500", n)
	}
	if !testdb.IsGeoPackage(db) {
		if n := testdb.Count(t, db, "SELECT count(*) FROM zoning_summary WHERE area_m2 > 0 AND ST_GeometryType(geom) = 'ST_MultiPolygon'"); n != zones {
			t.Errorf("%d dissolved zones with an area, want %d", n, zones)
		}
	}
	if want := fmt.Sprintf("SQL steps: %d rows affected", zones); !strings.Contains(out, want) {
		t.Errorf("run output lacks %q:\n%s", want, out)
	}
	code, out, _ = geoflow(t, env, "runs", "show", "1")
	for _, want := range []string{fmt.Sprintf("SQL steps %d rows affected", zones), fmt.Sprintf("by_zoning: %d rows affected by its SQL", zones)} {
		if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("runs show 1: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}

// TestSQLStepRefusedOnGeoPackage: a SQL step calling a spatial function fails a run on a
// GeoPackage before anything is recorded or harvested, saying which function, where, and
// what to use instead.
func TestSQLStepRefusedOnGeoPackage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "store.gpkg")
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked.Add(1) }))
	defer srv.Close()
	flow, _ := sqlFlow(t, srv.URL+"/wfs", "drop table if exists d;\ncreate table d as select zone,\n  ST_Union(geom) as geom from parcels group by zone;")
	code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "run", flow, "--progress", "off", "--log-level", "warn")
	if code != cli.ExitError {
		t.Errorf("exit %d, want %d\n%s%s", code, cli.ExitError, out, errs)
	}
	want := `ask "by_zoning" cannot run on this store:
  sql/step.sql:3:3: ST_Union() is not a function SQLite has: a GeoPackage store has no spatial SQL functions (beyond ST_MinX, ST_MaxX, ST_MinY, ST_MaxY, their PostGIS names ST_XMin, ST_XMax, ST_YMin, ST_YMax, and ST_IsEmpty): use PostGIS (--database postgres://...) for them`
	if !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if asked.Load() != 0 {
		t.Errorf("the WFS was asked %d times before the run was refused", asked.Load())
	}
	if tableExists(t, db, "geoflow_runs") && testdb.Count(t, db, "SELECT count(*) FROM geoflow_runs") != 0 {
		t.Errorf("a run was recorded")
	}
	if tableExists(t, db, "parcels") {
		t.Errorf("the parcels table was created")
	}
}

// TestSQLStepFailsThenReplay: a statement that fails rolls the whole script back (its
// first statements too), dead-letters the unit with the database's message, and the run
// exits 2; the file fixed, dlq replay runs the step again, once.
// TestValidateAgainstStore: geoflow validate with --database checks a flow as a run does
// before it starts: the spatial SQL step is refused for a GeoPackage, which is not
// created, and accepted for PostGIS; without --database, validate stays offline.
func TestValidateAgainstStore(t *testing.T) {
	flow, _ := sqlFlow(t, "http://127.0.0.1:1/wfs", "drop table if exists d;\ncreate table d as select zone,\n  ST_Union(geom) as geom from parcels group by zone;")
	gpkg := filepath.Join(t.TempDir(), "none.gpkg")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "offline", args: []string{"validate", flow}, code: 0, want: "ok (flow"},
		{name: "a GeoPackage", args: []string{"validate", flow, "--database", gpkg}, code: cli.ExitError, want: "sql/step.sql:3:3: ST_Union() is not a function SQLite has"},
		{name: "PostGIS", args: []string{"validate", flow, "--database", testdb.URL(t)}, code: 0, want: "ok (flow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": ""}, tt.args...)
			if code != tt.code || !strings.Contains(out+errs, tt.want) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", code, tt.code, tt.want, out, errs)
			}
		})
	}
	if _, err := os.Stat(gpkg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("validate created the GeoPackage it checked against: %v", err)
	}
}

func TestSQLStepFailsThenReplay(t *testing.T) { eachStore(t, testSQLStepFailsThenReplay) }

func testSQLStepFailsThenReplay(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	script := "create table step_log (run_id bigint, note text);\ninsert into step_log values (@run_id, 'ran');\ninsert into no_such_table values (1);\n"
	flow, sqlFile := sqlFlow(t, wfsURL(t, 300), script)
	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error")
	if code != cli.ExitDeadLetters || !strings.Contains(out, "1 dead letter (1 database)") {
		t.Fatalf("run with a failing statement: exit %d, want 2\n%s%s", code, out, errs)
	}
	entries := listJSON(t, env, "--run", "1")
	if len(entries) != 1 || entries[0].Task != "by_zoning" || entries[0].ErrorClass != "database" {
		t.Fatalf("dead letters %+v, want one of by_zoning, class database", entries)
	}
	msg := entries[0].Error
	wants := []string{"statement 3 of 3 (sql/step.sql line 3) failed", "no_such_table"}
	if !testdb.IsGeoPackage(db) {
		wants = append(wants, "at line 3, column 13", "SQLSTATE 42P01")
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("dead letter %q lacks %q", msg, w)
		}
	}
	if tableExists(t, db, "step_log") {
		t.Errorf("step_log exists: the statements before the failing one were not rolled back")
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM parcels"); n != 300 {
		t.Errorf("%d parcels, want the harvest's 300 kept", n)
	}

	if err := os.WriteFile(sqlFile, []byte(strings.Replace(script, "insert into no_such_table values (1)", "insert into step_log values (@run_id, 'fixed')", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = geoflow(t, env, "dlq", "replay", "--all", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "1 of 1 dead letters replayed") {
		t.Fatalf("replay with the file fixed: exit %d\n%s%s", code, out, errs)
	}
	if rows := testdb.Query(t, db, "SELECT run_id, note FROM step_log ORDER BY note"); fmt.Sprint(rows) != "[[1 fixed] [1 ran]]" {
		t.Errorf("step_log holds %v, want the script run once, in run 1", rows)
	}
	if st := testdb.Query(t, db, "SELECT status FROM geoflow_runs WHERE id = 1"); fmt.Sprint(st) != "[[done]]" {
		t.Errorf("run 1 is %v after the replay, want done", st)
	}
	if code, out, _ = geoflow(t, env, "dlq", "replay", "--all", "--log-level", "error"); !strings.Contains(out, "no open dead letters") && !strings.Contains(out, "0 of 0") {
		t.Logf("second replay: exit %d, %s", code, out)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM step_log"); n != 2 {
		t.Errorf("step_log holds %d rows after a second replay, want 2", n)
	}
}

// TestSQLStepResumed: the harvest fails (its server down), so the SQL step does not run;
// the server back, run --resume harvests and runs the step, once.
func TestSQLStepResumed(t *testing.T) { eachStore(t, testSQLStepResumed) }

func testSQLStepResumed(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	fx := wfsserver.New(wfsserver.Options{Features: 200})
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		fx.ServeHTTP(w, r)
	}))
	defer srv.Close()
	flow, _ := sqlFlow(t, srv.URL+"/wfs", "create table if not exists step_log (run_id bigint, n bigint);\ninsert into step_log select @run_id, count(*) from parcels;")
	code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error")
	if code != cli.ExitError || !strings.Contains(out, "by_zoning") {
		t.Fatalf("run against a server that is down: exit %d\n%s%s", code, out, errs)
	}
	if tableExists(t, db, "step_log") {
		t.Fatal("the SQL step ran although its upstream task failed")
	}
	up.Store(true)
	code, out, errs = geoflow(t, env, "run", flow, "--resume", "--progress", "off", "--log-level", "error")
	if code != 0 || !strings.Contains(out, "SQL steps: 1 rows affected") {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	if rows := testdb.Query(t, db, "SELECT run_id, n FROM step_log"); fmt.Sprint(rows) != "[[1 200]]" {
		t.Errorf("step_log holds %v, want the step run once in run 1, over the 200 parcels", rows)
	}
}

// TestSQLStepBBoxRerun: with --bbox the SQL step runs with @bbox set, and a script that
// recomputes only the box's rows leaves the others as the full run made them.
func TestSQLStepBBoxRerun(t *testing.T) { eachStore(t, testSQLStepBBoxRerun) }

func testSQLStepBBoxRerun(t *testing.T, db string) {
	env := map[string]string{"GEOFLOW_DATABASE_URL": db}
	inBox := "(@bbox is null or ST_Intersects(geom, @bbox))"
	boxSQL := "ST_Intersects(geom, ST_MakeEnvelope(%g, %g, %g, %g, 4326))"
	if testdb.IsGeoPackage(db) {
		inBox = "(@bbox_xmin is null or (ST_MaxX(geom) >= @bbox_xmin and ST_MinX(geom) <= @bbox_xmax and ST_MaxY(geom) >= @bbox_ymin and ST_MinY(geom) <= @bbox_ymax))"
		boxSQL = "ST_MaxX(geom) >= %g and ST_MaxY(geom) >= %g and ST_MinX(geom) <= %g and ST_MinY(geom) <= %g"
	}
	script := "create table if not exists cells (id text, zone text, run_id bigint);\n" +
		"delete from cells where id in (select gf_feature_id from parcels where " + inBox + ");\n" +
		"insert into cells select gf_feature_id, zone, @run_id from parcels where " + inBox + ";\n"
	flow, _ := sqlFlow(t, wfsURL(t, 400), script)
	if code, out, errs := geoflow(t, env, "run", flow, "--progress", "off", "--log-level", "error"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if n := testdb.Count(t, db, "SELECT count(*) FROM cells WHERE run_id = 1"); n != 400 {
		t.Fatalf("the full run wrote %d cells, want 400", n)
	}
	code, out, errs := geoflow(t, env, "run", flow, "--bbox", "11.46,48.06,11.49,48.09", "--progress", "off", "--log-level", "error")
	if code != 0 {
		t.Fatalf("bbox rerun: exit %d\n%s%s", code, out, errs)
	}
	inArea := testdb.Count(t, db, "SELECT count(*) FROM parcels WHERE "+fmt.Sprintf(boxSQL, 11.46, 48.06, 11.49, 48.09))
	if inArea == 0 || inArea >= 400 {
		t.Fatalf("%d parcels in the box, want some", inArea)
	}
	again := testdb.Count(t, db, "SELECT count(*) FROM cells WHERE run_id = 2")
	kept := testdb.Count(t, db, "SELECT count(*) FROM cells WHERE run_id = 1")
	if again != inArea || kept != 400-inArea {
		t.Errorf("after the rerun: %d cells of run 2 and %d of run 1, want the box's %d and the other %d", again, kept, inArea, 400-inArea)
	}
	if want := fmt.Sprintf("SQL steps: %d rows affected", 2*inArea); !strings.Contains(out, want) {
		t.Errorf("rerun output lacks %q (deleted and inserted again):\n%s", want, out)
	}
}

// TestValidateSQLStep: a SQL step's problems are reported at their key's line and
// column, offline.
func TestValidateSQLStep(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.sql"), []byte("select 1;\nselect @nope;"), 0o644); err != nil {
		t.Fatal(err)
	}
	flow := filepath.Join(dir, "flow.yaml")
	src := `name: v
tasks:
  parcels: {type: wfs, url: "http://x/wfs", typename: t, target: {table: parcels}}
  both:
    type: sql
    depends_on: [parcels]
    sql: select 1
    file: bad.sql
  neither:
    type: sql
    depends_on: [parcels]
  gone:
    type: sql
    depends_on: [parcels]
    file: gone.sql
  bad_file:
    type: sql
    depends_on: [parcels]
    file: bad.sql
  inline:
    type: sql
    depends_on: [parcels]
    sql: |
      begin;
      select @parcels_table;
  racing:
    type: sql
    sql: select count(*) from parcels
`
	if err := os.WriteFile(flow, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := geoflow(t, nil, "validate", flow)
	if code != cli.ExitError {
		t.Errorf("exit %d, want %d", code, cli.ExitError)
	}
	for _, want := range []string{
		flow + `:8:5: task "both": file: give the script inline (sql:) or in a file (file:), not both`,
		flow + `:9:3: task "neither": a sql task needs its script: sql: (inline) or file: (a file, relative to the flow)`,
		flow + `:15:5: task "gone": file: gone.sql does not exist (the file is read relative to the flow's file, in ` + dir + `)`,
		flow + `:19:5: task "bad_file": file: bad.sql:2:8: @nope is not a parameter of this step`,
		flow + `:23:5: task "inline": sql: line 1, column 1: BEGIN: a SQL step runs in one transaction`,
		flow + `:26:3: task "racing": depends_on: the script names parcels, the table task "parcels" writes, and may run while "parcels" does: add "parcels" to depends_on`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
