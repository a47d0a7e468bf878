package store_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

// TestOneQuery: one query is taken as its text, without its semicolon and trailing
// comment; anything else is refused wrapping store.ErrQuery, saying why.
func TestOneQuery(t *testing.T) {
	tests := []struct {
		name, sql string
		d         sqlscript.Dialect
		want      string // the text, or what the error says
		ok        bool
	}{
		{name: "a select", sql: "select 1 as a;  -- done\n", d: sqlscript.PostgreSQL, want: "select 1 as a", ok: true},
		{name: "with", sql: "WITH s AS (SELECT 1 AS a) SELECT a FROM s", d: sqlscript.SQLite, want: "WITH s AS (SELECT 1 AS a) SELECT a FROM s", ok: true},
		{name: "values", sql: "values (1)", d: sqlscript.SQLite, want: "values (1)", ok: true},
		{name: "table in PostgreSQL", sql: "TABLE zoning", d: sqlscript.PostgreSQL, want: "TABLE zoning", ok: true},
		{name: "table in SQLite", sql: "TABLE zoning", d: sqlscript.SQLite, want: "TABLE: a query reads"},
		{name: "a semicolon in a string", sql: "select ';' as a", d: sqlscript.PostgreSQL, want: "select ';' as a", ok: true},
		{name: "empty", sql: "  ", d: sqlscript.PostgreSQL, want: "query: empty"},
		{name: "two", sql: "select 1;\nselect 2", d: sqlscript.PostgreSQL, want: "a second statement at line 2, column 1"},
		{name: "a write in a CTE", sql: "with d as (select 1) delete from x", d: sqlscript.PostgreSQL, want: "DELETE: a query reads"},
		{name: "a pragma", sql: "pragma query_only = 0", d: sqlscript.SQLite, want: "PRAGMA: a query reads"},
		{name: "a parameter", sql: "select * from x where a = $1", d: sqlscript.PostgreSQL, want: "$1 at line 1, column 27: a query takes no parameters"},
		{name: "an open quote", sql: "select 'x", d: sqlscript.PostgreSQL, want: "line 1, column 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.OneQuery(tt.sql, tt.d)
			switch {
			case tt.ok && (err != nil || got != tt.want):
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			case !tt.ok && (!errors.Is(err, store.ErrQuery) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %q, %v; want an error wrapping store.ErrQuery saying %q", got, err, tt.want)
			}
		})
	}
}

// TestQueryStream: the head waits for what it needs (columns typed by their first
// values, the geometry column and its CRS) and comes once, before every row; rows held
// meanwhile come in order; a second geometry column or another CRS fails.
func TestQueryStream(t *testing.T) {
	g := func(x float64, srid int) store.QueryGeometry {
		return store.QueryGeometry{G: orb.Point{x, 0}, SRID: srid}
	}
	tests := []struct {
		name     string
		srid     int
		rows     [][]any
		wantHead string // columns as name:type, then the geometry and its CRS
		wantRows int
		wantErr  string
	}{
		{name: "typed by values", rows: [][]any{{nil, nil, nil}, {"a", int64(1), g(1, 25832)}, {"b", nil, g(2, 25832)}},
			wantHead: "zone:text n:bigint | g 25832", wantRows: 3},
		{name: "no value: text", rows: [][]any{{"a", nil, nil}}, wantHead: "zone:text n:text g:text |  0", wantRows: 1},
		{name: "the CRS asked", srid: 3857, rows: [][]any{{"a", 1.5, g(1, 3857)}}, wantHead: "zone:text n:double precision | g 3857", wantRows: 1},
		{name: "no geometry", rows: [][]any{{"a", true, nil}}, wantHead: "zone:text n:boolean g:text |  0", wantRows: 1},
		{name: "two geometry columns", rows: [][]any{{g(1, 4326), nil, g(2, 4326)}}, wantErr: "two geometry columns, zone and g"},
		{name: "two CRSs", rows: [][]any{{"a", int64(1), g(1, 4326)}, {"b", int64(2), g(2, 3857)}}, wantErr: "row 2: its geometry is in EPSG:3857, those before it in EPSG:4326"},
		{name: "a geometry column's text", rows: [][]any{{"a", int64(1), g(1, 4326)}, {"b", int64(2), "POINT (1 2)"}}, wantErr: `row 2: column "g" holds a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var head []string
			var rows int
			qs := &store.QueryStream{Geometry: -1, SRID: tt.srid,
				Columns: []store.Column{{Name: "zone"}, {Name: "n"}, {Name: "g"}},
				Head: func(r store.QueryResult) error {
					for _, c := range r.Columns {
						head = append(head, c.Name+":"+string(c.Type))
					}
					head = append(head, "|", r.Geometry, itoa(r.SRID))
					return nil
				},
				Fn: func(*store.StoredFeature) error {
					if head == nil {
						t.Error("a row before the head")
					}
					rows++
					return nil
				}}
			var err error
			for _, r := range tt.rows {
				if err = qs.Row(r); err != nil {
					break
				}
			}
			if err == nil {
				err = qs.End()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.Join(head, " ") != tt.wantHead || rows != tt.wantRows {
				t.Errorf("head %q, %d rows, %v; want %q, %d rows", strings.Join(head, " "), rows, err, tt.wantHead, tt.wantRows)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
