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

// Deletion asks DeleteUnseen to delete, from a mirror table, the features a run's task
// did not see in its area.
type Deletion struct {
	RunID      int64
	Flow, Task string
	// Area is the lon/lat area the run harvested (the task's area, cut to its --bbox):
	// only features whose geometry intersects it are candidates (the server's BBOX
	// filter would have returned them), and the safety rail weighs them against the
	// current features there. A feature stored without a geometry is never deleted.
	Area orb.Bound
	// Partial says a --bbox cut the task's area: then only features wholly inside it
	// are candidates, since one reaching beyond it may have moved out of it upstream.
	Partial bool
	// MaxFraction is the safety rail: when the candidates are more than this share of
	// the table's current features, nothing is deleted (Stopped) unless AllowMass.
	MaxFraction float64
	AllowMass   bool
}

// DeletionResult is what DeleteUnseen did.
type DeletionResult struct {
	// Deleted is how many features were deleted (with history, whose versions were
	// closed); Candidates how many were absent from the run; Current how many current
	// features the area held before (those whose box overlaps it: the rail's base).
	Deleted, Candidates, Current int64
	// Stopped says the safety rail held: Candidates exceeded MaxFraction of Current
	// and nothing was deleted.
	Stopped bool
	// SupersededBy is a later run of the same flow and task: deleting on this run's
	// evidence could remove what that run stored, so nothing was deleted.
	SupersededBy int64
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

// Mirrors is what mirror mode needs of the store, besides writing units.
type Mirrors interface {
	// SeenFeatures counts the distinct features (keys) the units of a run's task wrote
	// into the mirror table t, over every attempt and session of the run.
	SeenFeatures(ctx context.Context, t *FeatureTable, runID int64, task string) (int64, error)
	// DeleteUnseen deletes (with history, closes) in one transaction the current rows
	// of t that d's run did not see, recording each in the change log and the count on
	// the run's task, unless the safety rail holds or a later run supersedes d's run.
	// Only rows written by d's run or earlier are candidates. The keys earlier runs of
	// the flow's task saw are dropped (this run supersedes them), the run's own too when
	// a later run superseded it.
	DeleteUnseen(ctx context.Context, t *FeatureTable, d Deletion) (DeletionResult, error)
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
