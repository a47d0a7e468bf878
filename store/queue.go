package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Queue is a store whose runs' units a pool of worker processes (geoflow worker) can
// execute: PostgreSQL, through River's job queue on the same database. A distributed run
// (RunStart.Distributed) is recorded, planned, followed and finished by the process that
// started it, as any run; its units are River jobs, enqueued in the transaction that
// records them (AddUnits, and UnitTx.Complete for the children a unit plans), one live
// job per unit at most, and executed by whichever worker takes them.
type Queue interface {
	// TallyUnits counts a task's units by state, with what the finished ones wrote:
	// the starting process's view of a task its workers execute.
	TallyUnits(ctx context.Context, runID int64, task string) (UnitTally, error)
	// LostUnits returns the task's units that are open (pending, running, interrupted)
	// with no live job: their job was given up after its attempts (Given set, with its
	// last error), or it ended without the unit's outcome reaching the disk (a server
	// crash between the two commits). Requeue enqueues the second kind again.
	LostUnits(ctx context.Context, runID int64, task string) ([]LostUnit, error)
	// Requeue enqueues the units again (those with a live job are left alone).
	Requeue(ctx context.Context, runID int64, task string, keys []string) error
	// CancelUnits deletes the run's jobs that no worker has started (the run was
	// interrupted) and returns how many; the units stay open, for a resume.
	CancelUnits(ctx context.Context, runID int64) (int64, error)
	// RunningJobs counts the run's jobs that workers hold: once it is 0 after
	// CancelUnits, nothing of the run is in flight (a job taken but not yet started
	// as a unit counts too).
	RunningJobs(ctx context.Context, runID int64) (int64, error)
	// Work joins the pool: it executes units of any distributed run with fn, up to
	// cfg.Concurrency at once, until ctx is cancelled; then units in flight get
	// cfg.Grace to finish, after which their contexts are cancelled and their jobs
	// released at once for the other workers. A unit the pool took back while the
	// worker was silent (RescueUnits) has its context cancelled, with ErrUnitTaken as
	// the cause, at the worker's next report, and its writes are refused. It returns
	// when the worker has stopped.
	Work(ctx context.Context, cfg WorkConfig, fn func(ctx context.Context, job UnitJob) error) error
	// ListWorkers returns the workers that reported themselves, newest first.
	ListWorkers(ctx context.Context) ([]WorkerRecord, error)
	// RescueUnits gives the pool back, at once, the units in flight on workers taken for
	// dead: silent for WorkerSilent, stopped, or started again since they took the unit.
	// Each unit's job is available again with the lost attempt recorded in it, or given
	// up once its attempts are spent (LostUnits then reports it). It returns how many
	// units it gave back and which workers held them. Every live worker calls it as it
	// reports, and a distributed run's starting process as it follows: concurrent calls
	// rescue each unit once.
	RescueUnits(ctx context.Context) (units int64, workers []string, err error)

	// OrphanedRuns returns the distributed runs still recorded running that no process
	// holds, oldest first: the process that started them is gone (a crash, a lost
	// machine), and a worker adopts each (RunStart.AdoptedBy).
	OrphanedRuns(ctx context.Context) ([]int64, error)
}

// UnitTally is how a task's units stand.
type UnitTally struct {
	Total, Pending, Running, Done, Failed int64
	// Counts sums what the finished units wrote.
	Counts Counts
}

// Open is how many units are left to execute.
func (t UnitTally) Open() int64 { return t.Total - t.Done - t.Failed }

// LostUnit is an open unit of a distributed run that no job will execute.
type LostUnit struct {
	Key string
	// Given is set when the pool gave the unit's job up after its attempts; Error is
	// its last error and Attempts how many times it was taken.
	Given    bool
	Error    string
	Attempts int
}

// UnitJob is one unit of a distributed run, as a worker gets it.
type UnitJob struct {
	Ref UnitRef
	// Attempt counts the times the job was tried (snoozes not included), this one too.
	Attempt int
	// Enqueued is when the job was enqueued.
	Enqueued time.Time
}

// WorkConfig configures a worker (Queue.Work).
type WorkConfig struct {
	// ID names the worker in the pool (River's client id); unique among live workers.
	ID       string
	Hostname string
	Version  string
	// Concurrency is how many units it executes at once.
	Concurrency int
	// Grace is how long units in flight may take to finish once the worker is told to
	// stop.
	Grace time.Duration
	// RescueAfter is how long a unit may run: then it is stopped (and tried again
	// later, as an attempt), and a unit still marked running a little after is given
	// to another worker. It is the backstop for a worker that is alive but stuck (it
	// keeps reporting, its unit never ends); a worker that dies or stops reporting
	// loses its units after WorkerSilent. It must be longer than a unit can take: its
	// retries' max_elapsed, a server's delays, its writing.
	RescueAfter time.Duration
	// Stats, when set, is read every few seconds for the worker's report
	// (geoflow workers list).
	Stats func() WorkerStats
	// Logger gets the queue's warnings and errors (a failing rescuer, a lost leader);
	// nil discards them.
	Logger *slog.Logger
}

// WorkerStats is what a worker has done since it started.
type WorkerStats struct {
	Done, Failed, Snoozed int64
	InFlight              int
}

// WorkerRecord is a worker as it last reported itself.
type WorkerRecord struct {
	ID, Hostname, Version string
	PID, Concurrency      int
	StartedAt, SeenAt     time.Time
	StoppedAt             *time.Time
	WorkerStats
}

// WorkerReport is how often a worker reports itself.
const WorkerReport = 5 * time.Second

// WorkerSilent is how long a worker may go without reporting itself before it is taken
// for dead and its units are given to the others (Queue.RescueUnits): three reports.
// One or two late reports (a long garbage collection, a slow commit, a network blip)
// take nothing from a worker that is alive, and since the live workers look on their
// own reports, a dead worker's units are back in the queue 15 to 20 s after its last
// report.
const WorkerSilent = 3 * WorkerReport

// Alive reports whether the worker reported itself lately and has not stopped.
func (w WorkerRecord) Alive(now time.Time) bool {
	return w.StoppedAt == nil && now.Sub(w.SeenAt) < WorkerSilent
}

// ErrUnitTaken is returned for a write of a unit's execution whose job the pool took
// back (its worker was silent long enough to be taken for dead) and may have given to
// another worker: the write is refused, so that a unit is committed by one execution
// only.
var ErrUnitTaken = errors.New("store: the unit was taken back from this worker (it was silent) and given to the pool again")

// SnoozeError asks the pool to give a unit's job back and offer it again after For,
// without counting an attempt: the unit must wait (for its host's quota, for its run to
// be resumed) and should not hold a worker's slot meanwhile.
type SnoozeError struct {
	For    time.Duration
	Reason string
}

func (e *SnoozeError) Error() string {
	return fmt.Sprintf("unit snoozed for %s: %s", e.For.Round(time.Millisecond), e.Reason)
}

// Snooze returns a *SnoozeError.
func Snooze(d time.Duration, reason string) error {
	return &SnoozeError{For: max(d, 0), Reason: reason}
}

// ErrNoQueue is returned for a distributed run in a store that has no queue.
var ErrNoQueue = errors.New("distributed runs and their workers need the PostgreSQL store (River's job queue lives in the database): pass --database postgres://... or set GEOFLOW_DATABASE_URL")
