package postgis

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/geoflow/geoflow/store"
)

// riverLine names River's migrations in geoflow's listings.
const riverLine = "river"

// quietLog is River's logger for what it does on geoflow's behalf: its warnings only.
func quietLog(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return log
}

// riverMigrator is River's migrator for this database.
func (s *Store) riverMigrator() (*rivermigrate.Migrator[pgx.Tx], error) {
	m, err := rivermigrate.New(riverpgxv5.New(s.pool), &rivermigrate.Config{Logger: quietLog(nil), Schema: s.schema})
	if err != nil {
		return nil, fmt.Errorf("the job queue's migrations (River): %w", err)
	}
	return m, nil
}

// migrateRiver applies River's pending migrations (its job queue's tables, which
// distributed runs use) on conn, the connection that holds geoflow's migration lock:
// another pooled connection, taken while every other caller waiting for the lock holds
// one, would deadlock a pool that many runs start on at once. Each migration commits on
// its own, as River applies them: one adds a value to an enum that the next uses, which
// PostgreSQL refuses within one transaction.
func (s *Store) migrateRiver(ctx context.Context, conn *pgx.Conn) ([]store.MigrationState, error) {
	m, err := s.riverMigrator()
	if err != nil {
		return nil, err
	}
	var out []store.MigrationState
	for {
		var res *rivermigrate.MigrateResult
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var err error
			// MigrateTx, deprecated for batching migrations in one transaction, is used
			// here for one step a transaction, on the connection holding the lock (see
			// above): Migrate would take another connection from the pool.
			//lint:ignore SA1019 one migration per transaction, on the lock's connection
			res, err = m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1})
			return err
		})
		if err != nil {
			return out, translate("applying River's migrations (the job queue of distributed runs)", err)
		}
		if len(res.Versions) == 0 {
			return out, nil
		}
		now := time.Now()
		for _, v := range res.Versions {
			out = append(out, store.MigrationState{Line: riverLine, Version: v.Version, Name: v.Name, AppliedAt: &now})
		}
	}
}

// riverStatus lists River's migrations and which are applied.
func (s *Store) riverStatus(ctx context.Context) ([]store.MigrationState, error) {
	m, err := s.riverMigrator()
	if err != nil {
		return nil, err
	}
	applied := map[int]time.Time{}
	var exists bool
	if err := s.pool.QueryRow(ctx, "SELECT to_regclass('river_migration') IS NOT NULL").Scan(&exists); err != nil {
		return nil, translate("reading River's migration status", err)
	}
	if exists {
		have, err := m.ExistingVersions(ctx)
		if err != nil {
			return nil, translate("reading River's migration status", err)
		}
		for _, v := range have {
			applied[v.Version] = time.Time{}
		}
		// River's listing has no dates: read them from its table.
		rows, err := s.pool.Query(ctx, "SELECT version, created_at FROM river_migration")
		if err == nil {
			var v int
			var at time.Time
			_, _ = pgx.ForEachRow(rows, []any{&v, &at}, func() error { applied[v] = at; return nil })
		}
	}
	var out []store.MigrationState
	for _, v := range m.AllVersions() {
		st := store.MigrationState{Line: riverLine, Version: v.Version, Name: v.Name}
		if at, ok := applied[v.Version]; ok {
			st.AppliedAt = &at
		}
		out = append(out, st)
	}
	return out, nil
}
