package store

import (
	"encoding/json"

	"github.com/paulmach/orb"
)

// Unit is one piece of a task's work: a bbox tile or page of a WFS layer, a map tile, an
// image. Units are recorded before they run, so a restarted run knows what is left and a
// replay can execute exactly the same unit again.
type Unit struct {
	// Key identifies the unit within its task and run, stably across restarts
	// (for example "q.0.3" for a tile of a layer or "12/2200/1343" for a map tile).
	Key string
	// Parent is the key of the unit that planned this one, or "" for planned units.
	Parent string
	// BBox is the unit's lon/lat footprint; nil for units that are not spatial.
	BBox *orb.Bound
	// Spec holds whatever the task needs to execute the unit again after a restart.
	// It is stored and handed back unchanged; nil means no extra data.
	Spec json.RawMessage
}

// UnitRef names a unit of a run.
type UnitRef struct {
	RunID  int64
	TaskID string
	Key    string
}

// Counts is what writing a unit's output did. The counts are of features for feature
// tasks and of files for tile and imagery tasks.
type Counts struct {
	Inserted int64 // new rows or files
	Skipped  int64 // already present (same payload hash, or 304 Not Modified)
	Updated  int64 // changed rows in upsert mode, or rewritten files
	Bytes    int64 // response bytes read
	// Rejected are features of the response the task refused to store (the unit is
	// then dead-lettered as rejected); Merged, of those Skipped, are features whose
	// payload equals a stored row's of another feature id: append mode keys rows on the
	// payload, so they are that row.
	Rejected int64
	Merged   int64
	// Overlap are those of Skipped whose stored row this same run wrote: features the
	// run was returned more than once (a feature on the edge of two tiles, pages that
	// overlap), not features an earlier run stored. Skipped - Overlap were already
	// present before the run.
	Overlap int64
	// Requests are the HTTP requests the unit's execution made, retries included.
	Requests int64
	// Short are features the server counted for the unit beyond what it returned (a
	// count from an estimate, ids listed then deleted): the task's completeness check
	// allows for them.
	Short int64
	// Filtered are features of the response the task's transform.where left out:
	// returned, so observed, but not stored. A feature several tiles returned is counted
	// by one of them only (tasks.Transform), so their sum over a task is of distinct
	// features.
	Filtered int64
	// Affected are the rows a SQL step's statements affected (inserted, updated,
	// deleted, or created by CREATE TABLE ... AS where the database tells).
	Affected int64
}

// Add accumulates o into c.
func (c *Counts) Add(o Counts) {
	c.Inserted += o.Inserted
	c.Skipped += o.Skipped
	c.Overlap += o.Overlap
	c.Updated += o.Updated
	c.Bytes += o.Bytes
	c.Rejected += o.Rejected
	c.Merged += o.Merged
	c.Requests += o.Requests
	c.Short += o.Short
	c.Filtered += o.Filtered
	c.Affected += o.Affected
}

// Total is the number of features or files the output held.
func (c Counts) Total() int64 { return c.Inserted + c.Skipped + c.Updated }
