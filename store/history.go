package store

import (
	"context"
	"time"
)

// RunRecord is one run as the run history shows it. The unit and feature counts of a run
// that is still going are counted live from its units; those of a finished run are the
// totals recorded when it finished.
type RunRecord struct {
	ID               int64      `json:"id"`
	Flow             string     `json:"flow"`
	Status           State      `json:"status"`
	Trigger          string     `json:"trigger"`
	ScheduledFor     *time.Time `json:"scheduled_for"`
	StartedAt        time.Time  `json:"started_at"`
	FinishedAt       *time.Time `json:"finished_at"`
	UnitsTotal       int64      `json:"units_total"`
	UnitsDone        int64      `json:"units_done"`
	UnitsDead        int64      `json:"units_dead"`
	FeaturesInserted int64      `json:"features_inserted"`
	FeaturesSkipped  int64      `json:"features_skipped"`
	// FeaturesOverlap are those of FeaturesSkipped the run had stored itself: returned
	// more than once within the run (Counts.Overlap); the others were already present.
	FeaturesOverlap int64 `json:"features_overlap"`
	FeaturesUpdated int64 `json:"features_updated"`
	// FeaturesRejected were refused (their units are dead letters of class rejected);
	// FeaturesMerged were skipped as equal in payload to a stored feature of another id.
	FeaturesRejected int64 `json:"features_rejected"`
	FeaturesMerged   int64 `json:"features_merged"`
	// FeaturesDeleted were deleted from mirror tables (with history, their versions
	// closed), summed over the run's tasks.
	FeaturesDeleted int64 `json:"features_deleted"`
	// RowsAffected are the rows the run's SQL steps affected, summed over its tasks.
	RowsAffected int64  `json:"rows_affected"`
	Error        string `json:"error,omitempty"`
	// FinishedBy names who follows the run to its end when it is not the process that
	// started it: the pool's worker that adopted it once that process was gone
	// ("worker w2"), at AdoptedAt. Both are empty for every other run, a resumed one
	// included.
	FinishedBy string     `json:"finished_by,omitempty"`
	AdoptedAt  *time.Time `json:"adopted_at,omitempty"`
	// Area is the lon/lat box the run was restricted to (geoflow run --bbox), as
	// [min lon, min lat, max lon, max lat]; nil for a run of the flow's whole extent.
	// A resumed run keeps the area it started with.
	Area *[4]float64 `json:"area"`
	// Tasks is filled by GetRun only.
	Tasks []TaskRecord `json:"tasks,omitempty"`
	// RunHosts, filled by GetRun only, is what the run's requests asked of each host.
	RunHosts
}

// AdoptionVerb says how FinishedBy relates to a run a worker adopted, as the CLI and the
// web UI show it ("finished by worker w2"): "finished by" once the run has ended,
// "followed by" while it goes, "adopted by" when that worker is gone too (another one
// adopts the run). It is "" for a run nobody adopted.
func (r RunRecord) AdoptionVerb() string {
	switch {
	case r.FinishedBy == "":
		return ""
	case r.Status == Running:
		return "followed by"
	case r.Status == Crashed:
		return "adopted by"
	}
	return "finished by"
}

// TaskRecord is one task of a run.
type TaskRecord struct {
	Task             string     `json:"task"`
	Type             string     `json:"type"`
	State            State      `json:"state"`
	StartedAt        *time.Time `json:"started_at"`
	FinishedAt       *time.Time `json:"finished_at"`
	UnitsTotal       int64      `json:"units_total"`
	UnitsDone        int64      `json:"units_done"`
	UnitsDead        int64      `json:"units_dead"`
	FeaturesInserted int64      `json:"features_inserted"`
	FeaturesSkipped  int64      `json:"features_skipped"`
	FeaturesUpdated  int64      `json:"features_updated"`
	FeaturesRejected int64      `json:"features_rejected"`
	FeaturesMerged   int64      `json:"features_merged"`
	// FeaturesOverlap are those of FeaturesSkipped the task had stored itself in the
	// same run (returned twice by overlapping tiles or pages), the others being already
	// present.
	FeaturesOverlap int64 `json:"features_overlap"`
	// FeaturesDeleted were deleted from a mirror table; VersionsClosed, with history,
	// are the versions the task closed (updates and deletions); MirrorNote says what the
	// task decided about deletions, and why when it withheld them.
	FeaturesDeleted int64 `json:"features_deleted"`
	VersionsClosed  int64 `json:"versions_closed"`
	// FeaturesUnchanged, for a mirror, are the distinct features the run saw as they
	// were (FeaturesSkipped counts a feature each time a tile delivers it); nil otherwise.
	FeaturesUnchanged *int64 `json:"features_unchanged,omitempty"`
	MirrorNote        string `json:"mirror_note,omitempty"`
	Error             string `json:"error,omitempty"`
	// RowsAffected are the rows a SQL step's statements affected (type sql); 0 for other
	// tasks.
	RowsAffected int64 `json:"rows_affected"`
}

// RunFilter selects runs for ListRuns. The zero value selects the latest 100 runs.
type RunFilter struct {
	Flow   string // "" for every flow
	Status string // "" for every status
	// Limit caps how many runs are returned, latest first. Defaults to 100; negative
	// means no limit.
	Limit int
}

// History reads the run history.
type History interface {
	// ListRuns returns runs, latest first.
	ListRuns(ctx context.Context, f RunFilter) ([]RunRecord, error)
	// GetRun returns one run with its tasks and hosts, or fails wrapping ErrNotFound.
	GetRun(ctx context.Context, id int64) (RunRecord, error)
}

// SetRowsAffected sets the run's and its tasks' RowsAffected from what each task's units
// recorded (task id -> rows).
func (r *RunRecord) SetRowsAffected(byTask map[string]int64) {
	r.RowsAffected = 0
	for _, n := range byTask {
		r.RowsAffected += n
	}
	for i := range r.Tasks {
		r.Tasks[i].RowsAffected = byTask[r.Tasks[i].Task]
	}
}
