package tasks

import (
	"fmt"

	"github.com/geoflow/geoflow/dlq"
)

// IncompleteError says that the evidence of a harvest does not add up: the server
// counted or listed features that were neither returned nor shown not to exist. It is
// a unit's dead letter (what came is stored; a replay asks again) and, returned by a
// Finisher, makes the task end store.Incomplete and the run exit 3.
type IncompleteError struct {
	// Where is the unit (tile, page, batch) or the area the shortfall is in.
	Where string
	// Missing is how many features are unaccounted for; -1 when unknown.
	Missing int64
	// Reason is the evidence, in words: what was claimed and what was observed.
	Reason string
}

func (e *IncompleteError) Error() string {
	if e.Missing >= 0 {
		return fmt.Sprintf("incomplete: %d features missing in %s: %s", e.Missing, e.Where, e.Reason)
	}
	return fmt.Sprintf("incomplete: %s: %s", e.Where, e.Reason)
}

// FailureClass implements dlq.Classed.
func (e *IncompleteError) FailureClass() dlq.Class { return dlq.ClassIncomplete }

// BudgetError is a task that crossed one of geoflow's own limits (units planned, pages of
// a tile, ids listed, split depth): the server's answers would have had it go on without
// end. It fails the task, naming the key that raises the limit.
type BudgetError struct {
	Key   string // the flow key that sets the limit: "limits.max_units"
	Limit int64
	What  string // what crossed it, in words
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: past this task's limit of %d (raise %s if the data really is this large)", e.What, e.Limit, e.Key)
}

// FailureClass implements dlq.Classed: the same requests would cross it again.
func (e *BudgetError) FailureClass() dlq.Class { return dlq.ClassParse }
