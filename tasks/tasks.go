// Package tasks defines what a geoflow task is: a configured piece of a flow that plans
// its work as units and executes them one at a time. Units are the grain of concurrency,
// retries, the dead-letter queue, crash-safe resume and bbox-scoped reruns, for every kind
// of task (WFS features, map tiles, imagery).
//
// The package also declares what tasks need from the layers below them (HTTP through the
// rate-limit handler, and a Store that commits a unit's output with its bookkeeping) so
// that those layers can be implemented elsewhere and faked nowhere.
package tasks

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/retry"
)

// Unit is one piece of a task's work: a bbox tile or page of a WFS layer, a map tile, an
// image. Units are recorded in the database before they run, so a restarted run knows
// what is left and a replay can execute exactly the same unit again.
type Unit struct {
	// Key identifies the unit within its task and run, stably across restarts
	// (for example "q/0312" for a quadtree tile or "z12/2200/1343" for a map tile).
	Key string
	// Parent is the key of the unit that planned this one, or "" for units from Plan.
	Parent string
	// BBox is the unit's lon/lat footprint; nil for units that are not spatial.
	BBox *orb.Bound
	// Spec holds whatever the task needs to execute the unit again after a restart.
	// The runner stores it and hands it back unchanged; nil means no extra data.
	Spec json.RawMessage
}

// Result is what executing one unit produced. The counts are of features for feature
// tasks and of files for tile and imagery tasks.
type Result struct {
	Inserted int64 // new rows or files
	Skipped  int64 // already present (same payload hash, or 304 Not Modified)
	Updated  int64 // changed rows in upsert mode, or rewritten files
	Bytes    int64 // response bytes read
	// Children are further units this unit planned, such as the four quadrants of a
	// tile that held too many features for one response. They are stored as pending in
	// the same transaction that marks this unit done.
	Children []Unit
}

// Add accumulates o into r (children excluded).
func (r *Result) Add(o Result) {
	r.Inserted += o.Inserted
	r.Skipped += o.Skipped
	r.Updated += o.Updated
	r.Bytes += o.Bytes
}

// Task is a configured task of a flow, ready to run. Implementations must be safe for
// concurrent calls of Execute: the runner executes several units at once.
type Task interface {
	// Plan returns the task's initial units. It may do I/O (a GetCapabilities request,
	// creating the target table); an error fails the whole task. Plan is called again
	// when a run is resumed: it must return the same keys for the same configuration.
	Plan(ctx context.Context, env *Env) ([]Unit, error)
	// Execute runs one unit. Its output and the unit's done state must be committed
	// together through env.Store.CommitUnit, so that a crash at any instant neither
	// loses nor duplicates work. An error leaves the unit failed (a dead letter).
	Execute(ctx context.Context, env *Env, u Unit) (Result, error)
}

// HTTP is the rate-limit handler every request of a task goes through; *retry.Handler
// implements it.
type HTTP interface {
	Do(ctx context.Context, r retry.Request, read func(*http.Response) error) error
}

// Env is what a task gets from the runner for one run. It is shared by all units of the
// task; its fields must not be modified once the task has started.
type Env struct {
	Flow   string
	RunID  int64
	TaskID string
	Logger *slog.Logger
	HTTP   HTTP
	Store  Store
	// Area restricts spatial tasks to this lon/lat box (geoflow run --bbox); nil means
	// the task's own bbox only. Tasks plan only units that intersect it.
	Area *orb.Bound
	// Retry and RateLimit are the task's effective settings (flow defaults merged with
	// the task's own), to be put in every retry.Request.
	Retry     retry.Policy
	RateLimit retry.RateLimit
}

type unitStartKey struct{}

// WithUnitStart returns ctx carrying the time the runner started a unit, so that the
// store records it with the unit's outcome instead of in a commit of its own.
func WithUnitStart(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, unitStartKey{}, t)
}

// UnitStart returns the start time WithUnitStart put in ctx, if any.
func UnitStart(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(unitStartKey{}).(time.Time)
	return t, ok
}

// UnitRef names a unit in the database.
type UnitRef struct {
	RunID  int64
	TaskID string
	Key    string
}
