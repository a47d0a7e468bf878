package store

import (
	"context"
	"fmt"

	"github.com/paulmach/orb"
)

// What a run did to a feature of a keyed table (FeatureTable.Keyed), as the change log
// records it.
const (
	ChangeInserted = "inserted"
	ChangeUpdated  = "updated"
	ChangeDeleted  = "deleted"
)

// UnseenQuery asks UnseenFeatures for the current rows of a mirror table that a run's
// task did not see in its area.
type UnseenQuery struct {
	RunID int64
	Task  string
	// Area is the lon/lat area the run harvested (the task's area, cut to its --bbox):
	// only rows whose geometry intersects it are candidates (the server's BBOX filter
	// would have returned them). A row stored without a geometry is never one.
	Area orb.Bound
	// Partial says a --bbox cut the task's area: then only rows wholly inside it are
	// candidates, since one reaching beyond it may have moved out of it upstream.
	Partial bool
}

// UnseenFeature is a current row of a mirror table that a run did not see.
type UnseenFeature struct {
	Key       string // gf_key
	FeatureID string // gf_feature_id, "" when the row has none
}

// Unseen is what UnseenFeatures found: facts, not a decision.
type Unseen struct {
	// Features are the candidates, by key: current rows in the area, written by the run
	// or before (a row a later run wrote is that run's business), that no unit of the
	// run saw.
	Features []UnseenFeature
	// Current is how many current rows the area held (those whose box overlaps it),
	// candidates included: the base a safety rail weighs deletions against.
	Current int64
}

// DeleteKeys asks DeleteFeatures to delete rows of a mirror table by key.
type DeleteKeys struct {
	RunID int64
	Task  string
	Keys  []string
}

// Absence asks NoteAbsent to count the complete runs a mirror's rows were absent from.
type Absence struct {
	Flow, Task string
	RunID      int64
	// Keys are the rows the run did not see and could not have confirmed gone.
	Keys []string
}

// MassDeleteError is a mirror run's deletion stopped by the safety rail.
type MassDeleteError struct {
	RunID               int64
	Table               string
	Candidates, Current int64
	MaxFraction         float64
}

func (e *MassDeleteError) Error() string {
	return fmt.Sprintf("safety rail: the harvest would delete %d of the %d features of %s in the area (%.1f%%, more than max_delete_fraction %g); "+
		"nothing was deleted. If the server really lost them, apply the deletions with: geoflow run FLOW --resume=%d --allow-mass-delete",
		e.Candidates, e.Current, e.Table, 100*float64(e.Candidates)/float64(max(e.Current, 1)), e.MaxFraction, e.RunID)
}

// Mirrors is what mirror mode needs of the store, besides writing units. They are
// primitives: what to delete, and when, is decided above the store (tasks.FinishChanges).
type Mirrors interface {
	// SeenFeatures counts the distinct features (keys) the units of a run's task wrote
	// into the mirror table t, over every attempt and session of the run.
	SeenFeatures(ctx context.Context, t *FeatureTable, runID int64, task string) (int64, error)
	// UnseenFeatures lists the current rows of t in q's area that q's run did not see
	// (Unseen), and how many current rows the area holds. It changes nothing. A store
	// that cannot bring the area into t's CRS fails wrapping ErrNoTransform, unless the
	// query is not Partial: then every row is taken as inside the task's area.
	UnseenFeatures(ctx context.Context, t *FeatureTable, q UnseenQuery) (Unseen, error)
	// DeleteFeatures deletes (with history, closes) in one transaction the current rows
	// of t with d's keys that d's run or an earlier one wrote, recording each in the
	// change log (with what it held) and the count on the run's task, and forgets their
	// absence counts (NoteAbsent). It returns how many rows it deleted.
	DeleteFeatures(ctx context.Context, t *FeatureTable, d DeleteKeys) (int64, error)
	// WriteConfirmed writes features the run's task found by asking the server for them
	// by id (rows it did not see in the listing) into t as the unit ref of their own,
	// recorded done in the same transaction: a changed row is updated (with history, a
	// version opened), an unchanged one costs nothing, and their keys count as seen.
	WriteConfirmed(ctx context.Context, ref UnitRef, t *FeatureTable, src FeatureSource) (Counts, error)
	// NoteAbsent ends the absence streak of every row of t that a's run saw, then adds
	// a's run to the streak of each of a.Keys (once per run, however often it is
	// called) and returns, by key, how many complete runs each has been absent from.
	NoteAbsent(ctx context.Context, t *FeatureTable, a Absence) (map[string]int, error)
	// LaterRun is the latest run of the flow's task after runID that ran (its state
	// past pending); 0 when none did. Deleting on an earlier run's evidence could
	// remove what that run stored.
	LaterRun(ctx context.Context, flow, task string, runID int64) (int64, error)
	// ForgetSeen drops the seen keys of the flow's task recorded by runs before run
	// (their deletions can no longer apply).
	ForgetSeen(ctx context.Context, flow, task string, before int64) error
	// NoteChanges records on a run's task what its finish decided (TaskChanges).
	NoteChanges(ctx context.Context, runID int64, task string, c TaskChanges) error
}

// TaskChanges is what a feature task's finish records about the changes it made.
type TaskChanges struct {
	// History has the versions the run closed recorded: its units' updates and its
	// deletions.
	History bool
	// Seen, when not negative, is how many distinct features the run saw (a mirror):
	// those neither inserted nor updated are recorded as unchanged.
	Seen int64
	// Note says what the task decided about deletions: applied, or withheld and why.
	Note string
}

// Change is one entry of the change log: what a run did to one feature.
type Change struct {
	RunID     int64  `json:"run"`
	Task      string `json:"task"`
	Table     string `json:"table"`
	Key       string `json:"key"`
	FeatureID string `json:"feature_id,omitempty"`
	Kind      string `json:"change"` // ChangeInserted, ChangeUpdated, ChangeDeleted
	// With ChangeFilter.Features: the feature as the run left it (as it was, for a
	// deletion), lon/lat where the store can transform, else in the table's SRID. Nil
	// geometry with Superseded means a later run changed it again and the table keeps
	// no copy of this version (no history).
	Geometry   orb.Geometry   `json:"-"`
	Properties map[string]any `json:"-"`
	SRID       int            `json:"-"`
	Superseded bool           `json:"-"`
}

// ChangeFilter selects change log entries.
type ChangeFilter struct {
	RunID int64
	Task  string // "" for every task
	// Features asks for each change's feature (geometry and properties) too.
	Features bool
}

// Changes reads the change log.
type Changes interface {
	// ListChanges calls fn for each change of f's run, by task, then kind, then key.
	ListChanges(ctx context.Context, f ChangeFilter, fn func(Change) error) error
}

// ChangeFeature is c as a GeoJSON feature: its id (the feature id, nil when it has none),
// geometry and properties, with gf_change, gf_key, gf_task and gf_table among them,
// gf_superseded when a later run changed the feature again and no copy of this version
// is kept, and gf_srid when the store could not bring the geometry to lon/lat.
func ChangeFeature(c Change) (id any, g orb.Geometry, props map[string]any) {
	props = make(map[string]any, len(c.Properties)+6)
	for k, v := range c.Properties {
		props[k] = v
	}
	props["gf_change"], props["gf_key"], props["gf_task"], props["gf_table"] = c.Kind, c.Key, c.Task, c.Table
	if c.Superseded {
		props["gf_superseded"] = true
	}
	if c.Geometry != nil && c.SRID != 4326 && c.SRID != 0 {
		props["gf_srid"] = c.SRID
	}
	if c.FeatureID != "" {
		id = c.FeatureID
	}
	return id, c.Geometry, props
}
