package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
)

// MigrationState is one migration and whether it is applied.
type MigrationState struct {
	// Line is "" for geoflow's own migrations and "river" for those of River's queue
	// (the PostgreSQL store's distributed runs), which are applied after geoflow's.
	Line      string
	Version   int
	Name      string
	AppliedAt *time.Time // nil when pending
}

// Label names the migration as the CLI prints it: "009_distributed", "river 006_bulk_unique".
func (m MigrationState) Label() string {
	l := fmt.Sprintf("%03d_%s", m.Version, m.Name)
	if m.Line != "" {
		l = m.Line + " " + l
	}
	return l
}

// Migrator brings the store's schema up to date.
type Migrator interface {
	// Migrate applies every pending migration and returns those it applied.
	Migrate(ctx context.Context) ([]MigrationState, error)
	// MigrationStatus lists every migration and whether it is applied.
	MigrationStatus(ctx context.Context) ([]MigrationState, error)
}

// CheckMigrations returns nil when every migration m knows is applied, else an error
// wrapping ErrMigrationsPending that names the first pending one.
func CheckMigrations(ctx context.Context, m Migrator) error {
	states, err := m.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	for _, st := range states {
		if st.AppliedAt == nil {
			return fmt.Errorf("%s not applied (run geoflow migrate up): %w", st.Label(), ErrMigrationsPending)
		}
	}
	return nil
}

// Health is what a server's readiness check asks.
type Health interface {
	Pinger
	// CheckMigrations returns nil when the schema is current, else an error wrapping
	// ErrMigrationsPending.
	CheckMigrations(ctx context.Context) error
}

// DeadLetters is what the triage commands need: read, summarise and close entries.
type DeadLetters interface {
	ListDeadLetters(ctx context.Context, f dlq.Filter) ([]dlq.Entry, error)
	// GetDeadLetter returns one entry, or fails wrapping dlq.ErrNotFound.
	GetDeadLetter(ctx context.Context, id int64) (dlq.Entry, error)
	DeadLetterStats(ctx context.Context, f dlq.Filter) ([]dlq.StatsRow, error)
	// MarkReplayed appends a replay to an entry's history, closing it when item succeeded.
	MarkReplayed(ctx context.Context, id int64, item dlq.ReplayItem) error
	// DiscardDeadLetters closes open entries without replaying them; it returns the ids closed.
	DiscardDeadLetters(ctx context.Context, ids []int64) ([]int64, error)
	// PurgeDeadLetters deletes entries whose last failure is before before, in statuses.
	PurgeDeadLetters(ctx context.Context, before time.Time, statuses ...dlq.Status) (int64, error)
}

// Store is the driver-facing interface, every role at once: what each implementation
// (store/postgis, store/gpkg) provides and the store test suite checks, and what a
// process opens once (cmd) and splits among its consumers, each of which takes only the
// small interface it declares. Close releases it.
type Store interface {
	Migrator
	Health
	Runs
	Units
	DeadLetterSink
	DeadLetters
	FeatureTables
	TileStore
	AssetStore
	Mirrors
	History
	UnitLister
	Changes
	Fires
	Tables
	Queries
	SQLStore
	// MergedFeatures, ShortFeatures, FilteredFeatures and TaskExtent are what a task
	// reads of what runs recorded (tasks.Records, with Units.Unit).
	MergedFeatures(ctx context.Context, runID int64, task string) (int64, error)
	ShortFeatures(ctx context.Context, runID int64, task string) (int64, error)
	FilteredFeatures(ctx context.Context, runID int64, task string) (int64, error)
	TaskExtent(ctx context.Context, flow, task string) (b orb.Bound, ok bool, err error)
	Close()
}
