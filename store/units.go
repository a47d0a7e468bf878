package store

import (
	"context"
	"time"

	"github.com/paulmach/orb"
)

// UnitRecord is one recorded unit of a run as the web UI's map shows it: where it is,
// what state it is in and what it did.
type UnitRecord struct {
	Task   string     `json:"task"`
	Key    string     `json:"key"`
	Parent string     `json:"parent,omitempty"`
	BBox   *orb.Bound `json:"-"` // lon/lat; nil for units that are not spatial
	State  State      `json:"state"`
	// Attempts counts the unit's executions; Requests the HTTP requests its last
	// successful execution made, retries included (0 for units recorded before
	// requests were counted, and for units that did not end done).
	Attempts int   `json:"attempts"`
	Requests int64 `json:"requests"`
	// Worker names the process that executed the unit last (a geoflow worker's id, or
	// the process of a local run); "" before it ran.
	Worker     string     `json:"worker,omitempty"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`

	FeaturesInserted int64 `json:"features_inserted"`
	FeaturesSkipped  int64 `json:"features_skipped"`
	FeaturesUpdated  int64 `json:"features_updated"`
	FeaturesRejected int64 `json:"features_rejected"`
	FeaturesMerged   int64 `json:"features_merged"`
	// FeaturesOverlap are those of FeaturesSkipped the run had stored itself.
	FeaturesOverlap int64  `json:"features_overlap"`
	Bytes           int64  `json:"bytes"`
	Error           string `json:"error,omitempty"`
	// DeadLetter is the id of the unit's dead-letter entry (open or closed), 0 when it
	// has none.
	DeadLetter int64 `json:"dead_letter,omitempty"`
}

// UnitFilter selects units for ListUnits.
type UnitFilter struct {
	RunID int64  // required
	Task  string // "" for every task
	// State keeps units in this state; "" keeps all.
	State State
	// BBox keeps units whose bbox intersects it (lon/lat); units without a bbox never
	// match a non-nil BBox.
	BBox *orb.Bound
	// Limit caps how many units are returned, in task then key order. Defaults to
	// 10000; negative means no limit.
	Limit int
}

// UnitLister lists a run's units, for the web UI's run map.
type UnitLister interface {
	// ListUnits returns f's units in task then key order, and how many units matched
	// before Limit applied.
	ListUnits(ctx context.Context, f UnitFilter) (units []UnitRecord, total int64, err error)
}
