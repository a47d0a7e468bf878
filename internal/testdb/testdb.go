// Package testdb gives tests a real PostGIS: the database at GEOFLOW_TEST_DATABASE_URL
// when it is set (make test sets it), else a throwaway cluster started by postgis.sh for
// the test binary. Each test gets a fresh database of its own, cloned from a template that
// already has PostGIS, so tests can run in parallel without seeing each other's rows.
//
// There is no skip: a test that asks for a database and cannot have one fails.
package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the variable naming an existing PostGIS for tests.
const EnvURL = "GEOFLOW_TEST_DATABASE_URL"

// cluster is the database server of this test binary; tests share it, so it lives for
// the process. It is set once by Main or on first use.
type cluster struct {
	once    sync.Once
	baseURL string
	dir     string // non-empty when this process started the cluster
	err     error
}

var (
	shared  cluster
	counter atomic.Int64
)

// Main runs the tests of a package and stops a cluster started for them. Use it as
// `func TestMain(m *testing.M) { testdb.Main(m) }`.
func Main(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		stop(shared.dir)
	}
	os.Exit(code)
}

func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "postgis.sh")
}

func (c *cluster) get() (string, error) {
	c.once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			c.baseURL = u
			return
		}
		out, err := exec.Command("bash", script(), "start").Output()
		if err != nil {
			msg := err.Error()
			if ee, ok := err.(*exec.ExitError); ok {
				msg = strings.TrimSpace(string(ee.Stderr))
			}
			c.err = fmt.Errorf("testdb: no %s and starting a throwaway PostGIS failed: %s", EnvURL, msg)
			return
		}
		fields := strings.Fields(string(out))
		if len(fields) != 2 {
			c.err = fmt.Errorf("testdb: postgis.sh start printed %q", out)
			return
		}
		c.baseURL, c.dir = fields[0], fields[1]
	})
	return c.baseURL, c.err
}

func stop(dir string) { _ = exec.Command("bash", script(), "stop", dir).Run() }

// URL returns the URL of a new, empty database with PostGIS, dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	base, err := shared.get()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("testdb: connecting to %s: %v", redacted(base), err)
	}
	defer admin.Close(ctx)
	if err := ensureTemplate(ctx, admin); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("gf_test_%d_%d", os.Getpid(), counter.Add(1))
	// CREATE DATABASE ... TEMPLATE fails while another session is connected to the
	// template; template creation holds the lock below, so retry briefly.
	var lastErr error
	for i := 0; i < 50; i++ {
		if _, lastErr = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE gf_template", name)); lastErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		t.Fatalf("testdb: creating database %s: %v", name, lastErr)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
			c.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testdb: %s is not a URL: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

// ensureTemplate creates gf_template with PostGIS once per server, under an advisory lock
// so that parallel test binaries do not race.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) error {
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(4242)"); err != nil {
		return fmt.Errorf("testdb: locking: %w", err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(4242)") //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'gf_template')").Scan(&exists); err != nil {
		return fmt.Errorf("testdb: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE gf_template"); err != nil {
		return fmt.Errorf("testdb: creating the template database: %w", err)
	}
	cfg := admin.Config().Copy()
	cfg.Database = "gf_template"
	tc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("testdb: connecting to the template: %w", err)
	}
	defer tc.Close(ctx)
	if _, err := tc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis"); err != nil {
		return fmt.Errorf("testdb: the test database server has no PostGIS: %w", err)
	}
	return nil
}

func redacted(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(database URL)"
	}
	return u.Redacted()
}

// Rows runs a query for a test's assertions and returns every row's values as pgx decodes
// them. Production code reads the database only through the store packages; tests use this
// to look at what it wrote without going through the code under test.
func Rows(t testing.TB, dbURL, sql string, args ...any) [][]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("testdb: connecting: %v", err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("testdb: %s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatalf("testdb: %s: %v", sql, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("testdb: %s: %v", sql, err)
	}
	return out
}

// Int64 runs a query returning one integer against the PostGIS at dbURL (Count takes
// either store).
func Int64(t testing.TB, dbURL, sql string, args ...any) int64 {
	t.Helper()
	return Count(t, dbURL, sql, args...)
}

// Connect connects to the PostGIS at dbURL with the bookkeeping schema (geoflow) at the
// end of the search_path, so that a test's assertions name the bookkeeping tables as the
// store's SQL does, unqualified, while the tables a test creates unqualified land in
// public, as a user's would. A search_path the URL sets wins.
func Connect(ctx context.Context, dbURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	if _, ok := cfg.RuntimeParams["search_path"]; !ok {
		cfg.RuntimeParams["search_path"] = `"$user", public, geoflow`
	}
	return pgx.ConnectConfig(ctx, cfg)
}
