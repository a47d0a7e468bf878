// Package tasks defines what a geoflow task is: a configured piece of a flow that plans
// its work as units and, per unit, produces an Output (a stream of features, files and
// their rows, or further units). Units are the grain of concurrency, retries, the
// dead-letter queue, crash-safe resume and bbox-scoped reruns, for every kind of task
// (WFS features, map tiles, imagery).
//
// A task never writes a unit's output itself: the engine (package flows/engine) opens the
// unit's transaction, drains the Output into it and commits, marking the unit done in the
// same transaction. A task fetches through the rate-limit handler (HTTP) and reads what
// it needs from the store through the narrow parts of Stores its kind uses.
package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
)

// Task is a configured task of a flow, ready to run. Implementations must be safe for
// concurrent calls of Execute: the runner executes several units at once.
type Task interface {
	// Plan returns the task's initial units. It may do I/O (a GetCapabilities request,
	// creating the target table); an error fails the whole task. Plan is called again
	// when a run is resumed: it must return the same keys for the same configuration.
	Plan(ctx context.Context, env *Env) ([]store.Unit, error)
	// Execute fetches one unit and returns what it produced, for the runner to write.
	// It writes nothing to the store: a crash at any instant neither loses nor
	// duplicates work, since the output and the unit's done state commit together. An
	// error fails the unit: a source's failure is a dead letter, a *store.Fault makes the
	// runner wait for the store and execute the unit again.
	Execute(ctx context.Context, env *Env, u store.Unit) (*Output, error)
}

// Output is what executing one unit produced: data for the runner, which writes, in one
// transaction, the features of Response (if any), the tile and asset rows, the unit's done
// state with Counts, and Children as new pending units. Where the output holds a response
// of features, the runner judges it once written (Decide on its Evidence) and alone
// decides what follows: commit, execute the unit again as a split, plan the rest, or
// commit and dead-letter the unit as incomplete. Close releases what it holds; the runner
// calls it once the unit has ended, committed or not.
type Output struct {
	// Table and Response: a spooled response whose features are written into Table.
	Table    *store.FeatureTable
	Response *Response

	// Tiles and Assets: rows of files already in place on disk, for TileTable and
	// AssetTable.
	TileTable  *store.TileTable
	Tiles      []store.TileRow
	AssetTable *store.AssetTable
	Assets     []store.AssetRow

	// SQL is a SQL step's script, which the runner executes in the unit's transaction
	// (store.UnitTx.ExecSQL), before it marks the unit done: its effects and the unit's
	// done state commit together. The rows it affected are added to Counts.Affected.
	SQL *store.SQLScript

	// Children are further units this unit planned: the four quadrants of a tile, the
	// pages of a tile that cannot be split, the items of a search page.
	Children []store.Unit
	// Failed are units this unit tried as part of its own work and that failed for good:
	// the one tile of a block of tiles whose server answered 404, say. They are recorded
	// as children, not run again, and dead-lettered once the unit has committed, each
	// with its own error, so that a replay runs just that one again.
	Failed []Failure
	// Counts are what the unit did, as far as the task knows it: files new, rewritten
	// or not modified (the task looked the file up before fetching it), response bytes
	// read. The runner adds what writing the Response reports; rows of files add nothing.
	Counts store.Counts
	// Remove are files to delete once the unit has committed (a tile's previous file,
	// which must outlive a rollback).
	Remove []string
}

// Response is one response of a feature source, read off the network in full before the
// unit's transaction opens, with the ledger of what was asked and claimed.
type Response struct {
	// Body is the spooled response; the Output's Close closes it.
	Body *Spool
	// Decoding reads Body's features. The runner opens a new stream for every write of
	// the unit (again after a store fault): each must yield the same features.
	Decoding Decoding
	// Evidence is what was asked and what the server claimed before the body was read;
	// the stream completes it with what it observed.
	Evidence Evidence
}

// Decoding opens a response's features for the sink.
type Decoding interface {
	Open(body io.Reader) Stream
}

// Stream is one reading of a response's features. Once the sink has drained it, Observe
// completes the response's evidence with what the stream saw (features returned, the
// response's own counts and links, a fingerprint of its ids) and returns the features it
// refused, or nil.
type Stream interface {
	store.FeatureSource
	Observe(e *Evidence) *RejectedError
}

// Follower is implemented by tasks whose outputs carry a Response: it turns the runner's
// verdict on a response into what the task does next. For Split it returns the spec the
// unit is executed again with; for PageOn the unit (or units) asking for the rest. It
// plans; it does not judge.
type Follower interface {
	Follow(env *Env, u store.Unit, e Evidence, v Verdict) (redo json.RawMessage, children []store.Unit)
}

// OutsideArea is what Plan returns when the run's area (--bbox) does not touch the
// task's: there is nothing to do. The runner records the task done with no units, and
// fails the run when no task's area is touched (a --bbox with longitude and latitude
// swapped, say), naming each task's area.
type OutsideArea struct {
	Area orb.Bound // the task's own area, lon/lat
}

func (e *OutsideArea) Error() string {
	return fmt.Sprintf("the run's --bbox does not touch this task's area %g,%g,%g,%g", e.Area.Min[0], e.Area.Min[1], e.Area.Max[0], e.Area.Max[1])
}

// Failure is a unit that failed for good, and why.
type Failure struct {
	Unit store.Unit
	Err  error
}

// Close releases the output's resources; it is safe on a nil Output and more than once.
func (o *Output) Close() {
	if o != nil && o.Response != nil && o.Response.Body != nil {
		o.Response.Body.Close()
		o.Response.Body = nil
	}
}

// Preflight is implemented by configs whose task can tell before a run starts that it
// cannot run on the run's store (a SQL step calling a function a GeoPackage does not
// have). The runner calls it for each task of the run, with the task's Env as its units
// would get it (RunID 0), before it records the run or runs any unit; an error stops the
// run there.
type Preflight interface {
	Preflight(ctx context.Context, env *Env) error
}

// Finisher is implemented by tasks that finish their work once no unit is left to run
// (all done, or some dead): indexing a table, comparing the server's count with the
// features stored. The runner calls it unless the task was interrupted; a replay calls it
// after re-executing a task's dead units.
type Finisher interface {
	Finish(ctx context.Context, env *Env) error
}

// HTTP is the rate-limit handler every request of a task goes through; *retry.Handler
// implements it.
type HTTP interface {
	Do(ctx context.Context, r retry.Request, read func(*http.Response) error) error
}

// Stores are the parts of the store a task may use while it plans, executes and finishes
// its units, one interface per role: a task uses the one its kind needs (a feature task
// Features, Mirror and Records; a tile task Tiles and Records). Writes of a unit's output
// go through the engine's unit transaction, never through here. Each is the same store.
type Stores struct {
	Features store.FeatureTables
	Mirror   store.Mirrors
	Tiles    store.TileStore
	Assets   store.AssetStore
	Records  Records
	// Tables and Changes read what feature tasks stored, and what a run changed (an
	// export).
	Tables  store.Tables
	Changes store.Changes
	// Queries runs a user's SQL query read-only (an export of a query); nil where the
	// store runs none.
	Queries store.Queries
	// SQL tells which SQL the store runs (a SQL step's checks before a run); nil where
	// the store does not say, when those checks are left to the database.
	SQL store.SQLStore
}

// Records is what a task reads of what runs recorded.
type Records interface {
	// Unit returns a recorded unit of a run and its state, or fails wrapping
	// store.ErrNotFound (what a replay's task reads of how its run was planned).
	Unit(ctx context.Context, ref store.UnitRef) (store.Unit, store.State, error)
	// MergedFeatures is how many features the units of a run's task skipped as equal in
	// payload to a stored feature of another id (store.Counts.Merged), for completeness
	// checks.
	MergedFeatures(ctx context.Context, runID int64, task string) (int64, error)
	// ShortFeatures is how many features the servers of a run's task counted beyond
	// what they returned (store.Counts.Short), summed over its units, wherever they ran.
	ShortFeatures(ctx context.Context, runID int64, task string) (int64, error)
	// FilteredFeatures is how many distinct features the units of a run's task left out
	// by its transform.where (store.Counts.Filtered), summed over its units.
	FilteredFeatures(ctx context.Context, runID int64, task string) (int64, error)
	// TaskExtent is the lon/lat extent of what another task of a flow stored in its
	// latest finished run (bbox_from); ok is false when it stored nothing.
	TaskExtent(ctx context.Context, flow, task string) (b orb.Bound, ok bool, err error)
}

// Env is what a task gets from the runner for one run. It is shared by all units of the
// task; its fields must not be modified once the task has started.
type Env struct {
	Flow   string
	RunID  int64
	TaskID string
	Logger *slog.Logger
	HTTP   HTTP
	// Stores are the parts of the store the task may use, one per role.
	Stores
	// Area restricts spatial tasks to this lon/lat box (geoflow run --bbox); nil means
	// the task's own bbox only. Tasks plan only units that intersect it.
	Area *orb.Bound
	// Retry and RateLimit are the task's effective settings (flow defaults merged with
	// the task's own), to be put in every retry.Request.
	Retry     retry.Policy
	RateLimit retry.RateLimit
	// Redirects is the task's redirect policy, to be put in every retry.Request.
	Redirects retry.Redirects
	// Stopping is closed when the run is asked to stop (SIGTERM, Ctrl-C): units in
	// flight then have a grace period to end. A unit that works through many parts (a
	// block of tiles) stops starting new ones, returns what it has, and hands the rest
	// on as units of their own, left pending for a resume. Nil never closes.
	Stopping <-chan struct{}
	// AllowMassDelete lets a mirror delete more than its safety rail allows
	// (geoflow run --allow-mass-delete).
	AllowMassDelete bool
	// Memory is the run's one budget in bytes for responses, spools and decoded
	// features in flight (memory_limit); spools made by NewSpool draw on it. Nil is no
	// budget.
	Memory *Memory
	// UnitsLeft is set by the runner before Finish: how many of the task's units in the
	// run are not done (dead letters, or left for a resume). A mirror deletes nothing
	// while any is.
	UnitsLeft int64
}
