package store

import (
	"context"
	"time"
)

// Fire statuses, as recorded in geoflow_schedule_fires.
const (
	FireClaimed        = "claimed"         // won by an instance, not started yet
	FireQueued         = "queued"          // waiting for the previous run (overlap: queue)
	FireRunning        = "running"         // its run is going
	FireRan            = "ran"             // its run ended; the run's own status says how
	FireSkippedOverlap = "skipped_overlap" // the previous run was still going (overlap: skip)
	FireCancelled      = "cancelled"       // shutdown came before it could start
	FireFailed         = "failed"          // the run could not be started
)

// Fire is one claimed fire of a flow, as recorded.
type Fire struct {
	Flow         string    `json:"flow"`
	ScheduledFor time.Time `json:"scheduled_for"`
	ClaimedBy    string    `json:"claimed_by"`
	ClaimedAt    time.Time `json:"claimed_at"`
	Catchup      bool      `json:"catchup"`
	Status       string    `json:"status"`
	RunID        *int64    `json:"run_id"`
	Error        string    `json:"error,omitempty"`
}

// FlowLock is a lock on a flow, held while a scheduled run of it goes. Release must be
// called once; the lock of a process that dies ends with it.
type FlowLock interface {
	Release()
}

// Fires is what the scheduler records: each fire (flow, scheduled time) is claimed once
// across every instance sharing the store.
type Fires interface {
	// ClaimFire records that instance takes flow's fire at scheduledFor; false when it
	// is already claimed.
	ClaimFire(ctx context.Context, flow string, scheduledFor time.Time, instance string, catchup bool) (bool, error)
	// MarkFire records what became of a claimed fire.
	MarkFire(ctx context.Context, flow string, scheduledFor time.Time, status string, runID int64, errMsg string) error
	// LastFire is the latest fire of flow recorded; ok is false when there is none.
	LastFire(ctx context.Context, flow string) (at time.Time, ok bool, err error)
	// ListFires returns the fires of flow ("" for all), latest first, at most limit (all
	// when limit <= 0).
	ListFires(ctx context.Context, flow string, limit int) ([]Fire, error)
	// PruneFires deletes fires scheduled before cutoff.
	PruneFires(ctx context.Context, cutoff time.Time) (int64, error)
	// FlowRunning tells whether a run of flow is going, scheduled or not.
	FlowRunning(ctx context.Context, flow string) (bool, error)
	// TryLockFlow takes flow's lock without waiting: exclusively, or shared for runs that
	// may overlap. ok is false when a conflicting holder has it.
	TryLockFlow(ctx context.Context, flow string, shared bool) (lock FlowLock, ok bool, err error)
}
