// Package dlq is the dead-letter model and its triage logic: what is kept about a unit
// that failed for good, how a failure is classified and redacted, the filters people
// triage with, and the summaries they read. It holds no SQL: the stores (store/postgis, store/gpkg) keep
// entries, flows replays them and the CLI prints them.
//
// A dead letter is one entry per unit (run, task, unit key), never one per attempt: a
// later failure of the same unit updates its entry.
package dlq

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/paulmach/orb"
)

// Status is where an entry stands in triage.
type Status string

// The statuses of an entry: open until someone replays it successfully or gives it up.
const (
	StatusOpen      Status = "open"
	StatusReplayed  Status = "replayed"
	StatusDiscarded Status = "discarded"
)

// Statuses returns every status, in triage order. The slice is new on each call.
func Statuses() []Status { return []Status{StatusOpen, StatusReplayed, StatusDiscarded} }

// ErrNotFound is returned when no entry has the id asked for.
var ErrNotFound = errors.New("dlq: entry not found")

// Request is the last request of the failed unit, with its credentials redacted.
type Request struct {
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
	Body   string `json:"body,omitempty"`
}

// Replay results recorded in an entry's history.
const (
	ReplayOK     = "replayed"
	ReplayFailed = "failed"
)

// ReplayItem is one replay of an entry.
type ReplayItem struct {
	At     time.Time `json:"at"`
	Result string    `json:"result"` // ReplayOK or ReplayFailed
	Class  Class     `json:"error_class,omitempty"`
	Error  string    `json:"error,omitempty"` // redacted
}

// Entry is one dead letter: a unit of a run's task that failed for good. The zero value
// is an empty entry; an Entry is a plain value, safe to copy and share read-only.
type Entry struct {
	ID    int64      `json:"id"`
	Flow  string     `json:"flow"`
	Task  string     `json:"task"`
	RunID int64      `json:"run_id"`
	Unit  string     `json:"unit"`
	BBox  *orb.Bound `json:"-"` // lon/lat; nil for units that are not spatial

	Request    Request `json:"request"`
	Class      Class   `json:"error_class"`
	Error      string  `json:"error"`
	HTTPStatus int     `json:"http_status"` // 0 when no response was received
	Snippet    string  `json:"response_snippet"`
	// Attempts counts the requests made for the unit over all its failures: each failure
	// adds the attempts the rate-limit handler made before giving up (at least one).
	Attempts int `json:"attempts"`

	FirstFailedAt time.Time    `json:"first_failed_at"`
	LastFailedAt  time.Time    `json:"last_failed_at"`
	Status        Status       `json:"status"`
	History       []ReplayItem `json:"replay_history"`
}

// BBoxArray returns the entry's bbox as [minx, miny, maxx, maxy], or nil.
func (e *Entry) BBoxArray() *[4]float64 {
	if e.BBox == nil {
		return nil
	}
	return &[4]float64{e.BBox.Min[0], e.BBox.Min[1], e.BBox.Max[0], e.BBox.Max[1]}
}

// MarshalJSON writes the entry with its bbox as [minx, miny, maxx, maxy] (null when the
// unit is not spatial) and an empty history as [].
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	hist := e.History
	if hist == nil {
		hist = []ReplayItem{}
	}
	p := plain(e)
	p.History = hist
	return json.Marshal(struct {
		plain
		BBox *[4]float64 `json:"bbox"`
	}{p, e.BBoxArray()})
}

// String names the entry for messages: "dead letter 7 (run 42, task parcels, unit q/03)".
func (e *Entry) String() string {
	return fmt.Sprintf("dead letter %d (run %d, task %s, unit %s)", e.ID, e.RunID, e.Task, e.Unit)
}
