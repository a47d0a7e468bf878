package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

// execSQL runs script as unit ref of a SQL step (params p) and commits it when it
// succeeds, recording the rows it affected with the unit.
func execSQL(ctx context.Context, s store.Store, ref store.UnitRef, script string, p store.SQLParams) (int64, error) {
	c, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
		n, err := tx.ExecSQL(ctx, &store.SQLScript{Source: "test.sql", Text: script, Params: p})
		return store.Counts{Affected: n}, err
	})
	return c.Affected, err
}

// sqlRun starts a run with a SQL step's task "summary" of n units, and returns the
// dialect the store runs.
func sqlRun(t *testing.T, s store.Store, n int) (*store.Run, sqlscript.Dialect) {
	t.Helper()
	d, err := s.SQLDialect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "sql"})
	addUnits(t, s, run.ID, "summary", n)
	return run, d.Dialect
}

// mustAffect runs script as unit i and wants it to affect want rows.
func mustAffect(t *testing.T, s store.Store, run *store.Run, i int, script string, p store.SQLParams, want int64) {
	t.Helper()
	n, err := execSQL(t.Context(), s, store.UnitRef{RunID: run.ID, TaskID: "summary", Key: unitKey(i)}, script, p)
	if err != nil || n != want {
		t.Fatalf("%s\naffected %d rows (%v), want %d", script, n, err, want)
	}
}

// testSQLDialect: a GeoPackage knows every function a statement can call (SQLite's, the
// store's own, the table-valued ones) and has no spatial SQL beyond its own; PostgreSQL
// does not list them (a script may create its own).
func testSQLDialect(t *testing.T, s store.Store) {
	d, err := s.SQLDialect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	switch d.Dialect {
	case sqlscript.PostgreSQL:
		if d.Functions != nil {
			t.Errorf("PostgreSQL lists %d functions, want none (not known in advance)", len(d.Functions))
		}
	case sqlscript.SQLite:
		for _, f := range []string{"count", "upper", "st_minx", "st_isempty", "json_each", "pragma_table_info", "gf_url_host"} {
			if !d.Functions[f] {
				t.Errorf("SQLite's functions lack %s", f)
			}
		}
		for _, f := range []string{"st_union", "st_buffer", "st_area"} {
			if d.Functions[f] {
				t.Errorf("SQLite's functions hold %s", f)
			}
		}
		if !strings.Contains(d.Advice, "PostGIS") {
			t.Errorf("advice %q does not point to PostGIS", d.Advice)
		}
	default:
		t.Errorf("dialect %v", d.Dialect)
	}
}

// testSQLParams: every parameter is bound by the driver with its value and a type the
// database knows wherever it stands, NULL included; none is found in a string, a comment
// or a PostgreSQL operator.
func testSQLParams(t *testing.T, s store.Store) {
	run, d := sqlRun(t, s, 8)
	p := store.SQLParams{RunID: run.ID, Flow: "sql", Task: "summary", Tables: map[string]string{"parcels": "parcels", "staged": "staging.parcels"}}
	mustAffect(t, s, run, 0, `create table seen (run_id bigint, flow text, task text, parcels text, staged text, note text);
		-- @bbox in a comment is not bound; nor '@run_id' in a string
		insert into seen select @run_id, @flow, @task, @parcels_table, @staged_table, '@run_id'
		  where @bbox is null and @bbox_xmin is null and @bbox_ymin is null and @bbox_xmax is null and @bbox_ymax is null`, p, 1)
	parcels, staged := "parcels", "staging_parcels" // a GeoPackage has no schemas
	if d == sqlscript.PostgreSQL {
		parcels, staged = "public.parcels", "staging.parcels"
	}
	mustAffect(t, s, run, 1, `update seen set note = 'ok' where run_id = @run_id and flow = 'sql' and task = 'summary'
		and parcels = '`+parcels+`' and staged = '`+staged+`' and note = '@run_id'`, p, 1)

	p.Area = &orb.Bound{Min: orb.Point{1.5, 2}, Max: orb.Point{3, 4.25}}
	corners := `@bbox_xmin = 1.5 and @bbox_ymin = 2 and @bbox_xmax = 3 and @bbox_ymax = 4.25 and @bbox_xmin + 1 = 2.5`
	// The box is a geometry each database reads: PostGIS's, or a GeoPackage blob that
	// the store's ST_MinX and the like read (and a geometry column takes as it is).
	box := `ST_XMin(@bbox) = 1.5 and ST_YMax(@bbox) = 4.25 and ST_SRID(@bbox) = 4326 and GeometryType(@bbox) = 'POLYGON'`
	if d == sqlscript.SQLite {
		// and PostGIS's names for the corners too, for steps written once for both stores
		box = `ST_MinX(@bbox) = 1.5 and ST_MaxY(@bbox) = 4.25 and ST_XMin(@bbox) = 1.5 and ST_YMax(@bbox) = 4.25 and typeof(@bbox) = 'blob'`
	}
	mustAffect(t, s, run, 2, `update seen set note = 'box' where `+corners+` and `+box, p, 1)
	if d == sqlscript.PostgreSQL {
		// Operators with @ in them are operators; @name right after a space is a parameter.
		mustAffect(t, s, run, 3, `update seen set note = 'ops' where array[1, 2] @> array[1] and array[1] <@ array[1, 2]
			and to_tsvector('simple', 'a b') @@ to_tsquery('simple', 'a') and @ -2 = 2
			and ST_MakeEnvelope(0, 0, 10, 10, 4326) ~ @bbox and $$ @run_id $$ = ' @run_id '`, p, 1)
	}
	if d == sqlscript.PostgreSQL {
		// A statement PostgreSQL takes no parameters in fails for good, saying so.
		_, err := execSQL(t.Context(), s, store.UnitRef{RunID: run.ID, TaskID: "summary", Key: unitKey(7)}, "create view v as select @run_id as r", p)
		if f, ok := store.AsFault(err); !ok || f.Temporary() || !strings.Contains(err.Error(), "takes no parameters in this statement") {
			t.Errorf("a view with a parameter: %v, want a permanent fault saying PostgreSQL takes none there", err)
		}
	}
	// A name that is not a parameter, or a parameter of another form, is refused, not
	// bound to NULL.
	for i, bad := range []string{"select @nope", "select $1", "select ?"} {
		if d == sqlscript.PostgreSQL && bad == "select ?" {
			continue // an operator in PostgreSQL
		}
		_, err := execSQL(t.Context(), s, store.UnitRef{RunID: run.ID, TaskID: "summary", Key: unitKey(4 + i)}, "select 1;\n"+bad, p)
		if f, ok := store.AsFault(err); !ok || f.Temporary() || !strings.Contains(err.Error(), "statement 2 of 2 (test.sql line 2)") {
			t.Errorf("%s: %v, want a permanent fault naming statement 2 on line 2", bad, err)
		}
	}
}

// testSQLRowsAffected: the rows the statements affected are summed (a SELECT's rows are
// returned, not affected), recorded with the unit, and shown with its task and run.
func testSQLRowsAffected(t *testing.T, s store.Store) {
	run, _ := sqlRun(t, s, 2)
	mustAffect(t, s, run, 0, `create table z (zone text, n integer);
		insert into z values ('a', 1), ('b', 2), ('c', 3);
		update z set n = n + 1 where zone <> 'c';
		select * from z;
		delete from z where zone = 'a';
		with old as (select zone from z where n > 2) delete from z where zone in (select zone from old)`, store.SQLParams{RunID: run.ID}, 8)
	if err := s.SetTaskState(t.Context(), run.ID, "summary", "sql", store.Done, ""); err != nil {
		t.Fatal(err)
	}
	sum, err := s.FinishRun(t.Context(), run.ID, store.Done, "")
	if err != nil || sum.RowsAffected != 8 {
		t.Errorf("run summary: %d rows affected (%v), want 8", sum.RowsAffected, err)
	}
	rec, err := s.GetRun(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.RowsAffected != 8 || len(rec.Tasks) != 1 || rec.Tasks[0].RowsAffected != 8 {
		t.Errorf("run record: %d rows affected, tasks %+v; want 8 for the run and its task", rec.RowsAffected, rec.Tasks)
	}
}

// testSQLRollback: a failing statement fails the script with a permanent fault that names
// it and its line, and nothing of the script (its first statements, the unit's done
// state) is applied.
func testSQLRollback(t *testing.T, s store.Store) {
	run, d := sqlRun(t, s, 3)
	ref := store.UnitRef{RunID: run.ID, TaskID: "summary", Key: unitKey(0)}
	script := "create table kept (a integer);\ninsert into kept values (1);\n\n  insert into kept values (1, 2, 3);\nselect 1"
	_, err := execSQL(t.Context(), s, ref, script, store.SQLParams{RunID: run.ID})
	f, ok := store.AsFault(err)
	if !ok || f.Temporary() || !strings.Contains(err.Error(), "statement 3 of 4 (test.sql line 4) failed") {
		t.Fatalf("failing script: %v, want a permanent fault naming statement 3 of 4 on line 4", err)
	}
	if d == sqlscript.PostgreSQL && (f.Code != "42601" || !strings.Contains(err.Error(), "at line 4, column 31") || !strings.Contains(err.Error(), "SQLSTATE 42601")) {
		t.Errorf("PostgreSQL: %v (code %s), want SQLSTATE 42601 at line 4, column 31", err, f.Code)
	}
	if _, state, err := s.Unit(t.Context(), ref); err != nil || state != store.Pending {
		t.Errorf("the unit is %s (%v), want pending", state, err)
	}
	// The table the first statement created was rolled back with it.
	mustAffect(t, s, run, 1, "create table kept (a integer);\ninsert into kept values (1)", store.SQLParams{}, 1)

	// A script that does not split fails before it runs, at the quote never closed.
	_, err = execSQL(t.Context(), s, store.UnitRef{RunID: run.ID, TaskID: "summary", Key: unitKey(2)}, "select 1;\nselect 'abc", store.SQLParams{})
	if !strings.Contains(err.Error(), "line 2, column 8") {
		t.Errorf("unclosed string: %v, want line 2, column 8", err)
	}
	// Cancelling is not the database's failure.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := execSQL(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "summary", Key: unitKey(2)}, "select 1", store.SQLParams{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// testSQLBodies: statements with semicolons inside them run whole: a PostgreSQL DO
// block, a SQLite trigger.
func testSQLBodies(t *testing.T, s store.Store) {
	run, d := sqlRun(t, s, 2)
	script := `create table log (n integer); create table t (n integer);
		create trigger t_log after insert on t begin insert into log values (new.n); insert into log values (new.n * 10); end;
		insert into t values (1), (2)`
	want := int64(2)
	if d == sqlscript.PostgreSQL {
		script = `create table log (n integer);
			do $$ begin insert into log values (1); insert into log values (2); end $$;
			insert into log select n from log where n > @run_id - @run_id`
	}
	mustAffect(t, s, run, 0, script, store.SQLParams{RunID: run.ID}, want)
	mustAffect(t, s, run, 1, "delete from log", store.SQLParams{}, 4)
}
