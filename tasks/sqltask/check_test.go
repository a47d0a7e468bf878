package sqltask

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

func TestProblems(t *testing.T) {
	names := store.SQLParamNames([]string{"parcels"})
	lite := &store.SQLDialect{Dialect: sqlscript.SQLite, Functions: map[string]bool{"count": true, "st_minx": true}, Advice: "use PostGIS"}
	pg := &store.SQLDialect{Dialect: sqlscript.PostgreSQL}
	tests := []struct {
		name string
		text string
		d    *store.SQLDialect
		want []string
	}{
		{"fine", "delete from s where run_id <> @run_id;\ninsert into s select zone, count(*), @run_id from parcels where @parcels_table is not null group by zone", nil, nil},
		{"empty", "  -- nothing\n/* here */", nil, []string{"1:1: the script holds no statement"}},
		{"unclosed string", "select 1;\nselect 'abc", nil, []string{"2:8: a string ('...') is never closed"}},
		{"fine in PostgreSQL alone", `select E'it\'s'`, nil, nil},
		{"unknown parameter", "select 1;\n  select @nope", nil,
			[]string{"2:10: @nope is not a parameter of this step (@bbox, @bbox_xmax, @bbox_xmin, @bbox_ymax, @bbox_ymin, @flow, @parcels_table, @run_id, @task; names are lower-case; PostgreSQL's @ operator needs a space after it)"}},
		{"positional", "select $1", nil, []string{"1:8: $1: a SQL step takes named parameters only (@bbox, @bbox_xmax, @bbox_xmin, @bbox_ymax, @bbox_ymin, @flow, @parcels_table, @run_id, @task)"}},
		{"glued", "select 1 where 2=@run_id", nil, []string{"1:18: PostgreSQL reads the @ of @run_id as part of the operator before it: put a space between them"}},
		{"glued is fine on SQLite", "select 1 where 2=@run_id", lite, nil},
		{"transaction control", "begin;\ninsert into t values (1);\ncommit", nil, []string{
			"1:1: BEGIN: a SQL step runs in one transaction with its unit's done state, which geoflow begins and commits: leave out BEGIN, COMMIT and ROLLBACK (SAVEPOINT and ROLLBACK TO are fine)",
			"3:1: COMMIT: a SQL step runs in one transaction with its unit's done state, which geoflow begins and commits: leave out BEGIN, COMMIT and ROLLBACK (SAVEPOINT and ROLLBACK TO are fine)"}},
		{"savepoints are fine", "savepoint a; rollback to savepoint a; release a", nil, nil},
		{"spatial function on a GeoPackage", "create table d as\nselect zone, ST_Union(geom) from parcels where ST_MinX(geom) > @bbox_xmin group by zone", lite,
			[]string{"2:14: ST_Union() is not a function SQLite has: use PostGIS"}},
		{"spatial function on PostGIS", "create table d as select zone, ST_Union(geom) from parcels group by zone", pg, nil},
		{"dollar quotes on PostGIS", "do $$ begin perform @run_id; end $$", pg, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range problems(tc.text, names, tc.d) {
				got = append(got, fmt.Sprintf("%d:%d: %s", p.line, p.col, p.msg))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems(%q):\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestRaces(t *testing.T) {
	f := tasks.FlowInfo{
		Tables:     map[string]string{"parcels": "public.parcels", "roads": "staging.Roads", "later": "later_t", "other": "other_t"},
		Upstream:   map[string]bool{"parcels": true},
		Downstream: map[string]bool{"later": true},
	}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"upstream and downstream tables are fine", "select * from parcels, later_t", nil},
		{"a table written meanwhile", `select * from "roads" join other_t using (id)`, []string{
			`the script names other_t, the table task "other" writes, and may run while "other" does: add "other" to depends_on (or make "other" depend on this task)`,
			`the script names staging.Roads, the table task "roads" writes, and may run while "roads" does: add "roads" to depends_on (or make "roads" depend on this task)`}},
		{"in a string is no name", "select 'other_t'", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := races(tc.text, f); !slices.Equal(got, tc.want) {
				t.Errorf("races(%q):\n got %q\nwant %q", tc.text, got, tc.want)
			}
		})
	}
}

// problemList records what a config reports, key by key.
type problemList []string

func (p *problemList) At(key, format string, args ...any) {
	*p = append(*p, key+": "+fmt.Sprintf(format, args...))
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"ok.sql": "select @parcels_table", "bad.sql": "select 1;\n\nselect @nope", "empty.sql": "\n"} {
		if err := os.WriteFile(filepath.Join(dir, "sql", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := tasks.FlowInfo{Dir: dir, Tables: map[string]string{"parcels": "parcels"}, Upstream: map[string]bool{"parcels": true}}
	tests := []struct {
		name string
		c    Config
		want []string
	}{
		{"inline", Config{SQL: "select 1"}, nil},
		{"file", Config{File: "sql/ok.sql"}, nil},
		{"both", Config{SQL: "select 1", File: "sql/ok.sql"}, []string{"file: give the script inline (sql:) or in a file (file:), not both"}},
		{"neither", Config{}, []string{": a sql task needs its script: sql: (inline) or file: (a file, relative to the flow)"}},
		{"missing file", Config{File: "sql/gone.sql"}, []string{"file: sql/gone.sql does not exist (the file is read relative to the flow's file, in " + dir + ")"}},
		{"directory", Config{File: "sql"}, []string{"file: reading sql: read " + filepath.Join(dir, "sql") + ": is a directory"}},
		{"problem in a file", Config{File: "sql/bad.sql"}, []string{"file: sql/bad.sql:3:8: @nope is not a parameter of this step (@bbox, @bbox_xmax, @bbox_xmin, @bbox_ymax, @bbox_ymin, @flow, @parcels_table, @run_id, @task; names are lower-case; PostgreSQL's @ operator needs a space after it)"}},
		{"empty file", Config{File: "sql/empty.sql"}, []string{"file: sql/empty.sql:1:1: the script holds no statement"}},
		{"problem inline", Config{SQL: "commit"}, []string{"sql: line 1, column 1: COMMIT: a SQL step runs in one transaction with its unit's done state, which geoflow begins and commits: leave out BEGIN, COMMIT and ROLLBACK (SAVEPOINT and ROLLBACK TO are fine)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p problemList
			tc.c.Check(&p)
			tc.c.InFlow(in, &p)
			if !slices.Equal(p, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", p, tc.want)
			}
		})
	}
	// The file is read when the step runs, not kept from validation.
	c := Config{File: "sql/ok.sql"}
	c.InFlow(in, &problemList{})
	if err := os.WriteFile(filepath.Join(dir, "sql", "ok.sql"), []byte("select 2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, _, err := c.script(); err != nil || !strings.Contains(text, "select 2") {
		t.Errorf("script() = %q, %v; want the file as it is now", text, err)
	}
}
