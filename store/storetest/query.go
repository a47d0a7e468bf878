package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

// queried is what QueryFeatures handed over: its head (and how often) and its rows.
type queried struct {
	heads int
	head  store.QueryResult
	rows  []*store.StoredFeature
	early bool // a row came before the head
}

// query runs q and gathers what it handed over.
func query(t *testing.T, s store.Store, q store.Query) (*queried, error) {
	t.Helper()
	var got queried
	err := s.QueryFeatures(t.Context(), q, func(r store.QueryResult) error {
		got.heads++
		got.head = r
		return nil
	}, func(f *store.StoredFeature) error {
		got.early = got.early || got.heads == 0
		got.rows = append(got.rows, f)
		return nil
	})
	if err == nil && (got.heads != 1 || got.early) {
		t.Errorf("%s: head handed over %d times, a row before it: %v; want once, before the rows", q.SQL, got.heads, got.early)
	}
	return &got, err
}

// columnTypes are the head's columns as "name type".
func columnTypes(r store.QueryResult) []string {
	out := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = c.Name + " " + string(c.Type)
	}
	return out
}

// testQueryFeatures: a query's result is read as features, each store typing its
// columns as ReadFeatures types a table's (declared, or by value for an expression),
// finding its one geometry column and its CRS, and reading it in another CRS; a join
// and an aggregate read as well as a table; no geometry column is told as "".
func testQueryFeatures(t *testing.T, s store.Store) {
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(t.Context(), table); err != nil {
		t.Fatal(err)
	}
	ran(t, s, "parcels", table, mapFeatures())
	tests := []struct {
		name     string
		q        store.Query
		geometry string
		srid     int
		cols     []string
		rows     int
	}{
		{name: "a table's columns", q: store.Query{SQL: "SELECT name, n, area, ok, day, at, geom FROM parcels WHERE n IS NOT NULL ORDER BY n"},
			geometry: "geom", srid: 4326, cols: []string{"name text", "n bigint", "area double precision", "ok boolean", "day date", "at timestamptz"}, rows: 3},
		{name: "an aggregate without geometry", q: store.Query{SQL: "SELECT count(*) AS k, sum(area) AS total, max(name) AS last FROM parcels"},
			cols: []string{"k bigint", "total double precision", "last text"}, rows: 1},
		{name: "a join onto an aggregate", q: store.Query{SQL: `WITH s AS (SELECT ok, count(*) AS k FROM parcels WHERE ok IS NOT NULL GROUP BY ok)
			SELECT p.name, s.k, p.geom FROM parcels p JOIN s ON s.ok = p.ok ORDER BY p.name;`},
			geometry: "geom", srid: 4326, cols: []string{"name text", "k bigint"}, rows: 3},
		{name: "in Web Mercator", q: store.Query{SQL: "SELECT name, geom AS shape FROM parcels WHERE name = 'one'", SRID: 3857},
			geometry: "shape", srid: 3857, cols: []string{"name text"}, rows: 1},
		{name: "no rows", q: store.Query{SQL: "SELECT name, geom FROM parcels WHERE 1 = 0"}, geometry: "geom", cols: []string{"name text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := query(t, s, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got.head.Geometry != tt.geometry || got.head.SRID != tt.srid || !slices.Equal(columnTypes(got.head), tt.cols) {
				t.Errorf("head: geometry %q in EPSG:%d, columns %q; want %q in EPSG:%d, %q", got.head.Geometry, got.head.SRID, columnTypes(got.head), tt.geometry, tt.srid, tt.cols)
			}
			if len(got.rows) != tt.rows {
				t.Errorf("%d rows, want %d", len(got.rows), tt.rows)
			}
		})
	}
	checkQueryValues(t, s)
}

// checkQueryValues: the values of one row as each store reads them, its geometry in the
// CRS asked.
func checkQueryValues(t *testing.T, s store.Store) {
	got, err := query(t, s, store.Query{SQL: "SELECT name, n, area, ok, day, at, n * 2 AS twice, area / 2 AS half, geom FROM parcels WHERE name = 'one'", SRID: 3857})
	if err != nil || len(got.rows) != 1 {
		t.Fatalf("%d rows, %v; want 1", len(got.rows), err)
	}
	f := got.rows[0]
	want := map[string]any{"name": "one", "n": int64(1), "area": 1.5, "ok": true, "day": "2024-05-01", "twice": int64(2), "half": 0.75}
	for k, v := range want {
		if f.Properties[k] != v {
			t.Errorf("%s = %#v, want %#v", k, f.Properties[k], v)
		}
	}
	if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(f.Properties["at"])); err != nil || !at.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("at = %#v, want 2024-05-01T10:00:00Z", f.Properties["at"])
	}
	if p, ok := f.Geometry.(orb.Point); !ok || !sameShape(p, project.WGS84.ToMercator(at(0.25, 0.25)), 1e-3) {
		t.Errorf("geometry %v, want %v in Web Mercator", f.Geometry, project.WGS84.ToMercator(at(0.25, 0.25)))
	}
	if f.ID != "" || len(f.Properties) != len(want)+1 {
		t.Errorf("id %q, properties %v; want no id and %d properties", f.ID, f.Properties, len(want)+1)
	}
}

// testQueryRefused: what is not one query, a result an export cannot write (two
// geometry columns, two columns of one name) and what the database refuses fail, saying
// why; a query that would write is refused and writes nothing.
func testQueryRefused(t *testing.T, s store.Store) {
	table := typedTable("parcels", store.ModeAppend)
	if err := s.EnsureFeatureTable(t.Context(), table); err != nil {
		t.Fatal(err)
	}
	ran(t, s, "parcels", table, mapFeatures())
	tests := []struct {
		name, sql string
		want      string // in the error
		errQuery  bool   // wrapping store.ErrQuery
	}{
		{name: "empty", sql: " -- nothing\n", want: "empty", errQuery: true},
		{name: "two statements", sql: "SELECT 1 AS a; SELECT 2 AS b", want: "a second statement at line 1, column 16", errQuery: true},
		{name: "a write", sql: "DELETE FROM parcels", want: "DELETE: a query reads", errQuery: true},
		{name: "a parameter", sql: "SELECT name FROM parcels WHERE n = @n", want: "a query takes no parameters", errQuery: true},
		{name: "two geometry columns", sql: "SELECT name, geom, geom AS g2 FROM parcels", want: "geometry columns"},
		{name: "two columns of one name", sql: "SELECT name, n AS name, geom FROM parcels", want: `two columns named "name"`},
		{name: "an unknown column", sql: "SELECT nope FROM parcels", want: "nope"},
		{name: "a write in a CTE", sql: "WITH d AS (DELETE FROM parcels RETURNING name) SELECT name FROM d"},
	}
	if d, err := s.SQLDialect(t.Context()); err == nil && d.Dialect == sqlscript.PostgreSQL {
		// A SELECT that would write (SQLite has none) meets the read-only transaction.
		tests = append(tests, struct {
			name, sql, want string
			errQuery        bool
		}{name: "a function that writes", sql: "SELECT nextval(pg_get_serial_sequence('geoflow_runs', 'id')) AS n", want: "read-only transaction"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := query(t, s, store.Query{SQL: tt.sql})
			switch {
			case err == nil:
				t.Fatalf("read %d rows, want an error", len(got.rows))
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q does not say %q", err, tt.want)
			case tt.errQuery != errors.Is(err, store.ErrQuery):
				t.Errorf("error %q: wraps store.ErrQuery %v, want %v", err, !tt.errQuery, tt.errQuery)
			}
		})
	}
	if n := len(readAll(t, tablesOf(t, s), storedTable(t, tablesOf(t, s), "parcels"), store.FeatureQuery{})); n != len(mapFeatures()) {
		t.Errorf("after the refused queries the table has %d rows, want %d", n, len(mapFeatures()))
	}
}
