package store

import (
	"context"
	"fmt"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
)

// RunStart says which run to start.
type RunStart struct {
	Flow string
	// FlowFile is the absolute path the flow was read from; FlowText its resolved text
	// (environment variables expanded, secrets included: it stays in the store, which
	// holds the features and credentials' reach anyway) and FlowHash the hex sha-256 of
	// FlowText. Resume and replay run the recorded text, not whatever the file holds then.
	FlowFile, FlowText, FlowHash string
	Trigger                      string     // TriggerManual (default), TriggerSchedule, TriggerReplay, TriggerUI
	Area                         *orb.Bound // --bbox, lon/lat; nil for none
	OnlyTasks                    []string   // --task; nil for all
	// ScheduledFor is the fire time of a scheduled run; nil otherwise.
	ScheduledFor *time.Time
	// Resume continues the latest unfinished run of Flow instead of starting a new one:
	// one that is running with no process holding it (a crash), interrupted, or failed
	// with units or tasks left that are neither done nor dead-lettered.
	Resume bool
	// RunID, with Resume, names the run to continue instead of the latest.
	RunID int64
	// AdoptedBy, with Resume and RunID, adopts the run: it is taken over only while it
	// is still recorded running with no process holding it (the process that started
	// it is gone), and AdoptedBy is recorded as who finishes it ("worker w2"). A run
	// that is held, or has ended meanwhile, fails wrapping ErrNothingToResume. A
	// resume without it clears what an earlier adoption recorded.
	AdoptedBy string
	// Distributed makes the run's units jobs of the store's Queue, executed by its
	// workers; a resumed run keeps the mode it started with.
	Distributed bool
}

// Run is a run this process holds: no other process resumes or replays it meanwhile.
// Close releases it.
type Run struct {
	ID        int64
	Flow      string
	Resumed   bool
	StartedAt time.Time
	// Area and OnlyTasks are what the run was started with; a resumed run carries those
	// it recorded when it first started, whatever the resume asked for.
	Area      *orb.Bound
	OnlyTasks []string
	// FlowFile, FlowText and FlowHash are as recorded when the run first started; a run
	// recorded before flows were kept has FlowText "".
	FlowFile, FlowText, FlowHash string
	// Distributed is set for a run whose units the store's Queue hands to workers.
	Distributed bool
	// Release, set by the store, gives the run's hold back; Close calls it once.
	Release func()
	// Held, set by a store whose hold can end while the process goes on (a PostgreSQL
	// session ended by a restart or a cut connection), tells whether the process still
	// holds the run: a hold whose session ended is taken again, unless another process
	// took the run over meanwhile (adopted or resumed it), when Held reports false. An
	// error means it cannot tell now (the store is down). nil: the hold lasts as long as
	// the process. Safe for concurrent use, until Close.
	Held func(ctx context.Context) (bool, error)
}

// Close releases the run. It is safe to call more than once.
func (r *Run) Close() {
	if r != nil && r.Release != nil {
		r.Release()
		r.Release = nil
	}
}

// RunSummary is what a run did, summed over its tasks.
type RunSummary struct {
	ID                                int64
	Flow                              string
	Status                            State
	UnitsTotal, UnitsDone, UnitsDead  int64
	Inserted, Skipped, Updated, Bytes int64
	// Deleted were deleted from mirror tables (with history, their versions closed).
	Deleted int64
	// Filtered were left out by the tasks' transform.where (store.Counts.Filtered).
	Filtered int64
	// Overlap are those of Skipped this run had stored already (Counts.Overlap):
	// returned more than once within the run; Skipped - Overlap were already present.
	Overlap int64
	// RowsAffected are the rows the run's SQL steps affected (Counts.Affected).
	RowsAffected int64
	StartedAt    time.Time
	FinishedAt   *time.Time
	// Hosts is what the run's requests asked of each host (History.RunHosts).
	Hosts RunHosts
}

// RunInfo is what a run recorded when it started, as a replay needs it.
type RunInfo struct {
	ID       int64
	Flow     string
	Status   State
	Area     *orb.Bound // --bbox of the run; nil for none
	FlowFile string     // absolute path; "" for runs that recorded none
	FlowText string     // the resolved flow as it ran; "" for runs recorded before flows were kept
	FlowHash string
	// Distributed is set for a run whose units the store's Queue hands to workers.
	Distributed bool
}

// NothingToResume is StartRun's error when it finds no run to resume: it wraps
// ErrNothingToResume and says what was looked for.
func NothingToResume(st RunStart) error {
	if st.RunID > 0 {
		return fmt.Errorf("run %d of flow %q cannot be resumed: it is done, another process holds it, or it is not a run of this flow: %w",
			st.RunID, st.Flow, ErrNothingToResume)
	}
	return fmt.Errorf("flow %q: %w (no interrupted, crashed or unfinished failed run that no other process holds)", st.Flow, ErrNothingToResume)
}

// Runs records runs and their tasks.
type Runs interface {
	// StartRun records a new run, or takes over an unfinished one (Resume), and holds it.
	// With Resume and nothing to resume it fails wrapping ErrNothingToResume.
	StartRun(ctx context.Context, st RunStart) (*Run, error)
	// FinishRun records the run's final status and returns its totals, its hosts'
	// figures among them.
	FinishRun(ctx context.Context, runID int64, status State, errMsg string) (RunSummary, error)
	// TaskState returns a task's recorded state, Pending when it has none.
	TaskState(ctx context.Context, runID int64, task string) (State, error)
	// SetTaskState records a task's state (and its type, and a message when it failed).
	SetTaskState(ctx context.Context, runID int64, task, typ string, state State, errMsg string) error
	// RunInfo reads a run, or fails wrapping ErrNotFound.
	RunInfo(ctx context.Context, runID int64) (RunInfo, error)
	// HoldRun holds a run without waiting, or fails wrapping ErrRunBusy when another
	// process executes it.
	HoldRun(ctx context.Context, runID int64) (*Run, error)
	// AddTaskExecution records what a task's requests outside its units (its planning,
	// its finish's checks) asked of each host, added to what the task recorded before.
	AddTaskExecution(ctx context.Context, runID int64, task string, x Execution) error
}

// Units records a run's units and commits each unit's output with its outcome.
type Units interface {
	// AddUnits records planned units as pending; units already recorded are left as
	// they are (a resumed run plans again). In a distributed run it also enqueues, in
	// the same transaction, every unit of the task that is not done (pending again).
	AddUnits(ctx context.Context, runID int64, task string, units []Unit) error
	// OpenUnits returns the task's units that are not done, in key order.
	OpenUnits(ctx context.Context, runID int64, task string) ([]Unit, error)
	// Unit returns a recorded unit and its state, or fails wrapping ErrNotFound.
	Unit(ctx context.Context, ref UnitRef) (Unit, State, error)
	// StartUnit records that a unit's execution began (state running), for the UI's
	// live map; a resume takes running units as pending again. It is best-effort: the
	// runner goes on when it fails.
	StartUnit(ctx context.Context, ref UnitRef) error
	// EndUnit records a unit that ended without output (interrupted, or failed with no
	// dead letter recorded).
	EndUnit(ctx context.Context, ref UnitRef, state State, errMsg string) error
	// BeginUnit opens the transaction a unit's output is written in.
	BeginUnit(ctx context.Context, ref UnitRef) (UnitTx, error)
}

// UnitTx is one unit's transaction: its output, then its completion, commit together or
// not at all. It is used by one goroutine.
type UnitTx interface {
	// WriteFeatures streams src into t, reporting features inserted, already present
	// (skipped) and, in upsert mode, updated. src is read until io.EOF; any other error
	// from src aborts the write and is returned unchanged (wrapped), so the caller can
	// tell its source's failure from the store's (a *Fault). It is done with each
	// feature before it asks src for the next, so src may reuse a feature's Properties map
	// and coordinates for the next (spatial.FeatureReuser).
	WriteFeatures(ctx context.Context, t *FeatureTable, src FeatureSource) (Counts, error)
	// UpsertTiles records tiles, in one statement where the store can: Inserted for each
	// new row, Updated for each changed one. The tiles' files are already in place. When
	// rows name the same tile more than once, the last of them is recorded.
	UpsertTiles(ctx context.Context, t *TileTable, rows []TileRow) (Counts, error)
	// UpsertAsset records one imagery file, as UpsertTiles does a tile.
	UpsertAsset(ctx context.Context, t *AssetTable, row AssetRow) (Counts, error)
	// ExecSQL runs a flow's SQL step in this transaction: each statement of s in order,
	// its parameters bound by the driver, never spliced into the text. It returns the
	// rows the statements affected, summed (store.Counts.Affected). A statement that
	// fails fails it with a *Fault naming the statement, its line in s.Source and the
	// database's message (its SQLSTATE and position, where it tells them); the caller
	// rolls back, so nothing of the script is applied.
	ExecSQL(ctx context.Context, s *SQLScript) (rowsAffected int64, err error)
	// Complete marks the unit done with counts, started at start (its attempt counted),
	// and records children and failed as pending units of the same task, their Parent
	// set to it: children to execute (in a distributed run, enqueued in the same
	// transaction), failed to be dead-lettered once the unit commits.
	Complete(ctx context.Context, c Counts, children, failed []Unit, start time.Time) error
	// AddExecution records, with the unit's outcome, which process executed it and what
	// its requests asked of each host, added to what its earlier executions recorded (an
	// interrupted one, a failed one before a replay). It may be called with Complete or,
	// for a unit that ended without output, alone.
	AddExecution(ctx context.Context, x Execution) error
	// Fail, after Complete, marks the unit failed instead and records its dead letter
	// (as DeadLetterSink.RecordDeadLetter does, its attempt counted once): a unit whose
	// output is stored but incomplete (features refused) commits as a dead letter in
	// one transaction with what it stored.
	Fail(ctx context.Context, e dlq.Entry) error
	// Commit commits; Rollback discards (a no-op after Commit). Rollback must be called
	// on every path; it survives ctx's cancellation.
	Commit(ctx context.Context) error
	Rollback(ctx context.Context)
}

// DeadLetterSink is how the runner records units that failed for good.
type DeadLetterSink interface {
	// RecordDeadLetter marks the unit failed and records (or updates) its entry, in one
	// transaction, returning the entry's id.
	RecordDeadLetter(ctx context.Context, ref UnitRef, e dlq.Entry) (int64, error)
	// CloseDeadLetters marks replayed the open entries of run whose units are now done.
	CloseDeadLetters(ctx context.Context, runID int64) (int64, error)
	// DeadLetterCounts counts a run's open entries by class.
	DeadLetterCounts(ctx context.Context, runID int64) (map[dlq.Class]int64, error)
}

// Pinger tells whether the store answers.
type Pinger interface {
	Ping(ctx context.Context) error
}
