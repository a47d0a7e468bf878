package postgis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/paulmach/orb"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/migrations"
	"github.com/geoflow/geoflow/store"
)

// oldDatabase lays out dbURL as a geoflow before migration 018 left it: its migrations
// and River's applied in public, a run with an area, a unit with a box, a dead letter, a
// deleted feature in the change log, and a data table without a primary key holding two
// features.
func oldDatabase(t *testing.T, ctx context.Context, dbURL string) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "public"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	all, err := migrations.PostGIS()
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%.80s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE geoflow_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, m := range all {
		if m.Version >= 18 {
			break
		}
		exec(m.Up)
		exec(`INSERT INTO geoflow_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	}
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO geoflow_runs (id, flow, trigger, area) VALUES (1, 'f', 'manual', ST_MakeEnvelope(11.5, 48.1, 11.51, 48.11, 4326))`)
	exec(`INSERT INTO geoflow_run_tasks (run_id, task, type) VALUES (1, 't', 'wfs')`)
	exec(`INSERT INTO geoflow_units (run_id, task, key, bbox) VALUES (1, 't', 'u1', ST_MakeEnvelope(1, 2, 3, 4, 4326))`)
	exec(`INSERT INTO geoflow_dlq (flow, task, run_id, unit_key, bbox, error_class, error) VALUES ('f', 't', 1, 'u1', ST_MakeEnvelope(1, 2, 3, 4, 4326), 'http', 'boom')`)
	exec(`INSERT INTO geoflow_changes (run_id, task, target, gf_key, change, geom) VALUES (1, 't', 'public.parcels', 'k1', 'deleted', 'SRID=4326;POINT(7 8)')`)
	// What the export task of an older geoflow made, with its footprint a geometry.
	old := &Store{pool: pool}
	if err := old.EnsureAssetTable(ctx, &store.AssetTable{Name: "geoflow_exports"}); err != nil {
		t.Fatal(err)
	}
	exec(`INSERT INTO geoflow_exports (collection, item, asset, path) VALUES ('export', 'f/t', '/out/x.fgb', '/out/x.fgb')`)
	exec(`CREATE TABLE public.parcels (zone text, geom geometry(Geometry, 4326), gf_feature_id text, gf_payload_hash bytea NOT NULL,
		gf_run_id bigint, gf_fetched_at timestamptz NOT NULL DEFAULT now())`)
	exec(`CREATE UNIQUE INDEX parcels_gf_payload_hash_key ON public.parcels (gf_payload_hash)`)
	exec(`INSERT INTO public.parcels (zone, geom, gf_feature_id, gf_payload_hash) VALUES
		('a', 'SRID=4326;POINT(1 1)', 'p.1', '\x01'), ('b', 'SRID=4326;POINT(2 2)', 'p.2', '\x02')`)
	// A table of a source with a property named fid keeps it: its key is gf_fid.
	exec(`CREATE TABLE public.withfid (fid text, geom geometry, gf_payload_hash bytea NOT NULL)`)
	exec(`INSERT INTO public.withfid VALUES ('x', 'POINT(0 0)', '\x01')`)
}

// TestMigrateIntoSchema: a database an older geoflow migrated and wrote is moved into the
// bookkeeping schema by migration 018, its values kept, its data tables left in public with
// an integer primary key; a second Migrate does nothing.
func TestMigrateIntoSchema(t *testing.T) {
	db := testdb.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	oldDatabase(t, ctx, db)

	s, err := Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done, err := s.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) == 0 || done[0].Version != 18 {
		t.Errorf("Migrate applied %v; want 018 first (then any later ones)", done)
	}
	public := testdb.Rows(t, db, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if got := fmt.Sprint(public); got != "[[parcels] [spatial_ref_sys] [withfid]]" {
		t.Errorf("tables in public: %s; want the data tables (and PostGIS's)", got)
	}
	moved := testdb.Rows(t, db, `SELECT tablename FROM pg_tables WHERE schemaname = 'geoflow' ORDER BY 1`)
	for _, want := range []string{"geoflow_runs", "geoflow_units", "geoflow_dlq", "geoflow_changes", "geoflow_schema_migrations", "geoflow_exports", "river_job", "river_migration"} {
		if !slices.ContainsFunc(moved, func(r []any) bool { return r[0] == want }) {
			t.Errorf("%s is not in schema geoflow: %v", want, moved)
		}
	}
	checkNoBookkeepingGeometry(t, db)
	for _, tc := range []struct {
		name, sql, want string
	}{
		{"a run's area", `SELECT ST_AsText(ST_GeomFromEWKB(area)) || ' ' || ST_SRID(ST_GeomFromEWKB(area)) FROM geoflow.geoflow_runs`,
			"POLYGON((11.5 48.1,11.5 48.11,11.51 48.11,11.51 48.1,11.5 48.1)) 4326"},
		{"a unit's box", `SELECT ST_AsText(ST_GeomFromEWKB(bbox)) FROM geoflow.geoflow_units`, "POLYGON((1 2,1 4,3 4,3 2,1 2))"},
		{"a dead letter's box", `SELECT ST_AsText(ST_GeomFromEWKB(bbox)) FROM geoflow.geoflow_dlq`, "POLYGON((1 2,1 4,3 4,3 2,1 2))"},
		{"a deleted feature", `SELECT ST_AsEWKT(ST_GeomFromEWKB(geom)) FROM geoflow.geoflow_changes`, "SRID=4326;POINT(7 8)"},
		{"the data", `SELECT string_agg(fid || ':' || zone, ',' ORDER BY fid) FROM public.parcels`, "1:a,2:b"},
		{"a source's own fid", `SELECT gf_fid || ':' || fid FROM public.withfid`, "1:x"},
		{"River's type", `SELECT to_regtype('geoflow.river_job_state') IS NOT NULL AND to_regtype('public.river_job_state') IS NULL`, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(testdb.Rows(t, db, tc.sql)[0][0]); got != tc.want {
				t.Errorf("%s = %s; want %s", tc.sql, got, tc.want)
			}
		})
	}
	checkIntegerKey(t, db, "public", "parcels", "fid")
	checkIntegerKey(t, db, "public", "withfid", "gf_fid")

	// The store reads what it moved: the run's area, the unit's box, the table's columns.
	run, err := s.RunInfo(ctx, 1)
	if err != nil || run.Area == nil || run.Area.Min[0] != 11.5 || run.Area.Max[1] != 48.11 {
		t.Errorf("RunInfo(1) = %+v, %v; want its area 11.5,48.1,11.51,48.11", run.Area, err)
	}
	for _, tc := range []struct {
		name string
		bbox orb.Bound
		want int
	}{
		{"a box meeting the unit's", orb.Bound{Min: orb.Point{2, 3}, Max: orb.Point{5, 5}}, 1},
		{"a box away from it", orb.Bound{Min: orb.Point{10, 10}, Max: orb.Point{11, 11}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units, _, err := s.ListUnits(ctx, store.UnitFilter{RunID: 1, BBox: &tc.bbox})
			if err != nil || len(units) != tc.want || (tc.want == 1 && (units[0].BBox == nil || units[0].BBox.Max[0] != 3)) {
				t.Errorf("ListUnits in %v = %+v, %v; want %d unit(s) with box 1,2,3,4", tc.bbox, units, err, tc.want)
			}
		})
	}
	st, err := s.StoredTable(ctx, "", "parcels")
	if err != nil || st.Rows != 2 || len(st.Columns) != 1 || st.Columns[0].Name != "zone" {
		t.Errorf("StoredTable(parcels) = %+v, %v; want 2 rows and the one column zone", st, err)
	}
	if again, err := s.Migrate(ctx); err != nil || len(again) != 0 {
		t.Errorf("Migrate again = %v, %v; want nothing applied", again, err)
	}
}

// checkNoBookkeepingGeometry fails the test when geometry_columns, what QGIS and ogrinfo
// list as layers, names a table of geoflow's bookkeeping or River's.
func checkNoBookkeepingGeometry(t *testing.T, db string) {
	t.Helper()
	rows := testdb.Rows(t, db, `SELECT f_table_schema || '.' || f_table_name FROM geometry_columns
		WHERE f_table_name LIKE 'geoflow\_%' OR f_table_name LIKE 'river\_%' OR f_table_schema = 'geoflow'`)
	if len(rows) > 0 {
		t.Errorf("geometry_columns lists bookkeeping tables: %v", rows)
	}
}

// checkIntegerKey fails the test unless schema.table's primary key is the one bigint
// identity column col, which GDAL and QGIS take as the feature id.
func checkIntegerKey(t *testing.T, db, schema, table, col string) {
	t.Helper()
	rows := testdb.Rows(t, db, `SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attidentity::text
		FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY (k.conkey)
		WHERE k.conrelid = $1::regclass AND k.contype = 'p'`, pgx.Identifier{schema, table}.Sanitize())
	if got := fmt.Sprint(rows); got != fmt.Sprintf("[[%s bigint a]]", col) {
		t.Errorf("primary key of %s.%s: %s; want [[%s bigint a]] (an identity bigint)", schema, table, got, col)
	}
}

// TestNewStoreQGISView: on a new database the bookkeeping has no geometry column, a new
// data table has an integer primary key fid, and its features, read back, have no fid
// property.
func TestNewStoreQGISView(t *testing.T) {
	ctx := context.Background()
	db := testdb.URL(t)
	s, err := Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureAssetTable(ctx, &store.AssetTable{Name: "geoflow_exports", Bookkeeping: true}); err != nil {
		t.Fatal(err)
	}
	checkNoBookkeepingGeometry(t, db)
	table := &store.FeatureTable{Name: "roads", SRID: 4326, Columns: []store.Column{{Name: "kind", Property: "kind", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	checkIntegerKey(t, db, "public", "roads", "fid")
	named := &store.FeatureTable{Name: "named", Schema: "geo", Columns: []store.Column{{Name: "fid", Property: "fid", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, named); err != nil {
		t.Fatal(err)
	}
	checkIntegerKey(t, db, "geo", "named", "gf_fid")
	for _, tc := range []struct {
		name, schema, table, want string
	}{
		{"fid is no property", "", "roads", "[{kind text}]"},
		{"a source's fid is one", "geo", "named", "[{fid text}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.StoredTable(ctx, tc.schema, tc.table)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(st.Columns); got != tc.want {
				t.Errorf("columns %s; want %s", got, tc.want)
			}
		})
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND (tablename LIKE 'geoflow\_%' OR tablename LIKE 'river\_%')`); n != 0 {
		t.Errorf("%d bookkeeping tables in public; want none", n)
	}
}

// TestOtherSchema: --schema puts the bookkeeping elsewhere, data tables still in public.
func TestOtherSchema(t *testing.T) {
	db := testdb.URL(t)
	ctx := context.Background()
	s, err := Open(ctx, db, &Options{Schema: "gf_meta"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRun(ctx, store.RunStart{Flow: "f"}); err != nil {
		t.Fatal(err)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM gf_meta.geoflow_runs`); n != 1 {
		t.Errorf("%d runs in gf_meta; want 1", n)
	}
	if n := testdb.Int64(t, db, `SELECT count(*) FROM pg_tables WHERE schemaname = 'gf_meta' AND tablename = 'river_job'`); n != 1 {
		t.Error("River's river_job is not in gf_meta")
	}
	if _, err := Open(ctx, db, &Options{Schema: "no-dash"}); err == nil {
		t.Error("schema no-dash accepted")
	}
}
