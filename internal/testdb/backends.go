package testdb

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	// The GeoPackage store registers the SQLite driver; tests read its files through it.
	_ "github.com/geoflow/geoflow/store/gpkg"
)

// Backend is one store implementation the shared tests run against, as river runs its
// driver tests against each driver: a name for t.Run, and New, which returns the
// location of a new, empty store of that kind (what --database takes) for one test.
type Backend struct {
	Name string
	New  func(t testing.TB) string
}

// Backends returns every store implementation: PostGIS (a fresh database) and GeoPackage
// (a new file in the test's temporary directory).
func Backends() []Backend {
	return []Backend{
		{Name: "postgis", New: URL},
		{Name: "gpkg", New: func(t testing.TB) string { return filepath.Join(t.TempDir(), "test.gpkg") }},
	}
}

// IsGeoPackage tells a GeoPackage location from a PostgreSQL URL.
func IsGeoPackage(loc string) bool { return strings.HasSuffix(strings.ToLower(loc), ".gpkg") }

// Query runs a query for a test's assertions against the store at loc, PostGIS or
// GeoPackage, and returns every row's values. Queries that both must answer use SQL
// both speak (count(*), count(DISTINCT ...), plain comparisons).
func Query(t testing.TB, loc, query string, args ...any) [][]any {
	t.Helper()
	if !IsGeoPackage(loc) {
		return Rows(t, loc, query, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", "file:"+loc+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatalf("testdb: opening %s: %v", loc, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatalf("testdb: %s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("testdb: %s: %v", query, err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("testdb: %s: %v", query, err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = append([]byte(nil), b...)
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("testdb: %s: %v", query, err)
	}
	return out
}

// Count runs a query returning one integer against the store at loc.
func Count(t testing.TB, loc, query string, args ...any) int64 {
	t.Helper()
	rows := Query(t, loc, query, args...)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("testdb: %s: want one value, got %v", query, rows)
	}
	switch v := rows[0][0].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case nil:
		return 0
	}
	t.Fatalf("testdb: %s: %T is not an integer", query, rows[0][0])
	return 0
}

// Exec runs a statement that changes the store at loc, PostGIS or GeoPackage, for a test
// that sets up a state (rows lost in an area) without the code under test, and returns
// the number of rows it affected. SQL differs between the two: callers branch on
// IsGeoPackage.
func Exec(t testing.TB, loc, stmt string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !IsGeoPackage(loc) {
		c, err := Connect(ctx, loc)
		if err != nil {
			t.Fatalf("testdb: connecting: %v", err)
		}
		defer c.Close(ctx)
		tag, err := c.Exec(ctx, stmt, args...)
		if err != nil {
			t.Fatalf("testdb: %s: %v", stmt, err)
		}
		return tag.RowsAffected()
	}
	db, err := sql.Open("sqlite", "file:"+loc+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatalf("testdb: opening %s: %v", loc, err)
	}
	defer db.Close()
	res, err := db.ExecContext(ctx, stmt, args...)
	if err != nil {
		t.Fatalf("testdb: %s: %v", stmt, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatalf("testdb: %s: %v", stmt, err)
	}
	return n
}
