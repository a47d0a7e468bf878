package postgis

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/migrations"
	"github.com/geoflow/geoflow/store"
)

// migrationLock is the advisory lock key that serialises migrations across processes
// ("geoflow" in ASCII), so two runs starting together never apply a step twice.
const migrationLock = 0x67656f666c6f77

// ddlLock is the advisory lock key that serialises geoflow's table creation across
// processes: CREATE SCHEMA, CREATE TABLE and CREATE INDEX ... IF NOT EXISTS are not safe
// against themselves in PostgreSQL (two sessions both find a name free, and one fails
// with "relation already exists" or a duplicate key in the catalogue), so first runs
// that start together would fail.
const ddlLock = 0x67660002

// ddl runs fn, which inspects and creates tables, holding ddlLock: whoever comes second
// finds what the first created. The lock is held on a connection of its own, outside the
// pool (fn's statements use the pool, which a pooled lock holder could exhaust while
// others wait), and ends with it, also when the process dies.
func (s *Store) ddl(ctx context.Context, fn func() error) error {
	conn, err := s.lockConn(ctx, "creating tables: connecting to take the lock")
	if err != nil {
		return err
	}
	defer closeConn(conn)()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", ddlLock); err != nil {
		return translate("creating tables: taking the lock", err)
	}
	return fn()
}

// Migrate creates the PostGIS extension when it is missing and applies every pending
// migration, each in its own transaction, under an advisory lock, then River's (the job
// queue of distributed runs). It returns the migrations it applied.
func (s *Store) Migrate(ctx context.Context) ([]store.MigrationState, error) {
	all, err := migrations.PostGIS()
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, translate("migrating: acquiring a connection", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return nil, translate("migrating: taking the migration lock", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck // the lock also ends with the session

	if err := ensurePostGIS(ctx, conn.Conn()); err != nil {
		return nil, err
	}
	if err := s.ensureSchema(ctx, conn.Conn()); err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS geoflow_schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, translate("migrating: creating the version table", err)
	}
	applied, err := appliedVersions(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}
	var done []store.MigrationState
	for _, m := range all {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		err := pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.Up); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO geoflow_schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, translate(fmt.Sprintf("applying migration %03d_%s", m.Version, m.Name), err)
		}
		now := time.Now()
		done = append(done, store.MigrationState{Version: m.Version, Name: m.Name, AppliedAt: &now})
	}
	river, err := s.migrateRiver(ctx, conn.Conn())
	return append(done, river...), err
}

// ensurePostGIS creates the extension when missing, with a clear error when it cannot be.
func ensurePostGIS(ctx context.Context, conn *pgx.Conn) error {
	var installed bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'postgis')").Scan(&installed); err != nil {
		return translate("checking for PostGIS", err)
	}
	if installed {
		return nil
	}
	var available bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'postgis')").Scan(&available); err != nil {
		return translate("checking for PostGIS", err)
	}
	if !available {
		return fmt.Errorf("the database server has no PostGIS extension: install it on the server (Debian: apt-get install postgresql-15-postgis-3) or use the postgis/postgis image")
	}
	// In public, where it always was: the bookkeeping schema, first in the search_path,
	// is geoflow's, not the extension's.
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis SCHEMA public"); err != nil {
		return fmt.Errorf("creating the PostGIS extension (needs a superuser or the database owner; ask your DBA to run CREATE EXTENSION postgis): %w", translate("creating PostGIS", err))
	}
	return nil
}

func appliedVersions(ctx context.Context, conn *pgx.Conn) (map[int]time.Time, error) {
	rows, err := conn.Query(ctx, "SELECT version, applied_at FROM geoflow_schema_migrations")
	if err != nil {
		return nil, translate("reading applied migrations", err)
	}
	out := map[int]time.Time{}
	var v int
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&v, &at}, func() error {
		out[v] = at
		return nil
	})
	return out, translate("reading applied migrations", err)
}

// MigrationStatus lists every embedded migration and when it was applied.
func (s *Store) MigrationStatus(ctx context.Context) ([]store.MigrationState, error) {
	all, err := migrations.PostGIS()
	if err != nil {
		return nil, err
	}
	var exists bool
	// Before migration 018, in public: found there through the search_path.
	if err := s.pool.QueryRow(ctx, "SELECT to_regclass('geoflow_schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return nil, translate("reading migration status", err)
	}
	applied := map[int]time.Time{}
	if exists {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, translate("reading migration status", err)
		}
		defer conn.Release()
		if applied, err = appliedVersions(ctx, conn.Conn()); err != nil {
			return nil, err
		}
	}
	out := make([]store.MigrationState, len(all))
	for i, m := range all {
		out[i] = store.MigrationState{Version: m.Version, Name: m.Name}
		if at, ok := applied[m.Version]; ok {
			out[i].AppliedAt = &at
		}
	}
	river, err := s.riverStatus(ctx)
	return append(out, river...), err
}
