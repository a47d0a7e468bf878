package gpkg

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/geoflow/geoflow/migrations"
	"github.com/geoflow/geoflow/store"
)

// Migrate applies every pending migration, each in its own transaction, which takes the
// file's write lock at once (BEGIN IMMEDIATE) so that two processes starting together
// never apply a step twice. It then makes sure of the spatial reference systems every
// GeoPackage must list, and returns the migrations it applied.
func (s *Store) Migrate(ctx context.Context) ([]store.MigrationState, error) {
	all, err := migrations.GeoPackage()
	if err != nil {
		return nil, err
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS geoflow_schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (`+now+`))`); err != nil {
		return nil, translate("migrating: creating the version table", err)
	}
	var done []store.MigrationState
	for _, m := range all {
		applied := false
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM geoflow_schema_migrations WHERE version = ?", m.Version).Scan(&n); err != nil || n > 0 {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.Up); err != nil {
				return err
			}
			applied = true
			_, err := tx.ExecContext(ctx, "INSERT INTO geoflow_schema_migrations (version, name) VALUES (?, ?)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, translate(fmt.Sprintf("applying migration %03d_%s", m.Version, m.Name), err)
		}
		if applied {
			t := time.Now()
			done = append(done, store.MigrationState{Version: m.Version, Name: m.Name, AppliedAt: &t})
		}
	}
	for _, ref := range requiredRefs() {
		if err := s.ensureSRS(ctx, s.w, ref); err != nil {
			return done, err
		}
	}
	return done, nil
}

// execer is what both the writer and a transaction on it offer.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ensureSRS adds ref to gpkg_spatial_ref_sys when its srs_id is not there yet; a row
// already there (GDAL's, the user's) is kept as it is.
func (s *Store) ensureSRS(ctx context.Context, q execer, ref spatialRef) error {
	return recordSRS(ctx, q, ref)
}

// recordSRS is ensureSRS for any file, the store's or an export's.
func recordSRS(ctx context.Context, q execer, ref spatialRef) error {
	_, err := q.ExecContext(ctx, `INSERT INTO gpkg_spatial_ref_sys (srs_name, srs_id, organization, organization_coordsys_id, definition, description)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (srs_id) DO NOTHING`,
		ref.Name, ref.ID, ref.Organization, ref.OrgID, ref.Definition, nullIfEmpty(ref.Description))
	return translate(fmt.Sprintf("recording spatial reference system %d", ref.ID), err)
}

// writeTx runs fn in a transaction on the writer and commits it, or rolls it back when
// fn fails.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// MigrationStatus lists every embedded migration and when it was applied.
func (s *Store) MigrationStatus(ctx context.Context) ([]store.MigrationState, error) {
	all, err := migrations.GeoPackage()
	if err != nil {
		return nil, err
	}
	applied := map[int]time.Time{}
	var exists int
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'geoflow_schema_migrations'").Scan(&exists); err != nil {
		return nil, translate("reading migration status", err)
	}
	if exists > 0 {
		rows, err := s.r.QueryContext(ctx, "SELECT version, applied_at FROM geoflow_schema_migrations")
		if err != nil {
			return nil, translate("reading applied migrations", err)
		}
		defer rows.Close()
		for rows.Next() {
			var v int
			var at time.Time
			if err := rows.Scan(&v, reqTime{&at}); err != nil {
				return nil, translate("reading applied migrations", err)
			}
			applied[v] = at
		}
		if err := rows.Err(); err != nil {
			return nil, translate("reading applied migrations", err)
		}
	}
	out := make([]store.MigrationState, len(all))
	for i, m := range all {
		out[i] = store.MigrationState{Version: m.Version, Name: m.Name}
		if at, ok := applied[m.Version]; ok {
			out[i].AppliedAt = &at
		}
	}
	return out, nil
}

// CheckMigrations implements store.Health.
func (s *Store) CheckMigrations(ctx context.Context) error { return store.CheckMigrations(ctx, s) }
