package engine

import (
	"context"
	"errors"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// Stores are the parts of the store the engine uses, one interface per role, and the
// parts it hands its tasks. They are normally one store, split by the command that
// opened it.
type Stores struct {
	// Runs records runs and their tasks' states; required.
	Runs RunBook
	// Units records units and opens each unit's transaction; required.
	Units UnitBook
	// DeadLetters records the units that failed for good, and the replays of them;
	// required.
	DeadLetters DeadLetterBook
	// Tasks are the parts each task may use (tasks.Env).
	Tasks tasks.Stores
	// Queue is the pool's job queue, for distributed runs and the pool's workers; nil
	// where the store has none (a GeoPackage).
	Queue store.Queue
}

// RunBook is how the engine records a run and its tasks.
type RunBook interface {
	// Migrate applies every pending migration: a run starts on a current schema.
	Migrate(ctx context.Context) ([]store.MigrationState, error)
	store.Runs
}

// UnitBook is how the unit loop records units and writes their output.
type UnitBook interface {
	store.Units
	// Ping tells whether the store answers again after a fault.
	Ping(ctx context.Context) error
}

// DeadLetterBook is how the engine records units that failed for good, counts them for
// a task's end, and marks them replayed.
type DeadLetterBook interface {
	store.DeadLetterSink
	DeadLetterStats(ctx context.Context, f dlq.Filter) ([]dlq.StatsRow, error)
	// GetDeadLetter returns one entry, or fails wrapping dlq.ErrNotFound.
	GetDeadLetter(ctx context.Context, id int64) (dlq.Entry, error)
	// MarkReplayed appends a replay to an entry's history, closing it when item succeeded.
	MarkReplayed(ctx context.Context, id int64, item dlq.ReplayItem) error
}

// check reports a Stores without the parts every run needs.
func (s Stores) check() error {
	if s.Runs == nil || s.Units == nil || s.DeadLetters == nil {
		return errors.New("engine: no store")
	}
	return nil
}
