package store

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/geoflow/geoflow/dlq"
)

// Fault is a failure of where output goes (the database, the disk), never of a source:
// the runner retries the unit after the sink is back instead of charging the failure to
// a remote host. Store implementations translate every database error into a Fault;
// tasks wrap file-system failures with DiskFault.
type Fault struct {
	Class dlq.Class // dlq.ClassDatabase or dlq.ClassDisk
	Op    string    // what was being done: "inserting into public.parcels"
	Code  string    // the database's error code (SQLSTATE), when it answered one
	Msg   string    // what went wrong, without credentials
	// Temp says a new attempt may succeed once the sink is back: a lost or refused
	// connection, a server shutting down or restarting, a deadlock, a full disk.
	Temp bool
	Err  error
}

func (f *Fault) Error() string {
	if f.Msg == "" && f.Err != nil {
		return fmt.Sprintf("%s: %v", f.Op, f.Err)
	}
	return fmt.Sprintf("%s: %s", f.Op, f.Msg)
}

// Unwrap returns the underlying error.
func (f *Fault) Unwrap() error { return f.Err }

// FailureClass implements dlq.Classed.
func (f *Fault) FailureClass() dlq.Class { return f.Class }

// Temporary tells whether waiting for the sink and trying again may help.
func (f *Fault) Temporary() bool { return f.Temp }

// DiskFault wraps a file-system failure while doing op. A full disk or quota and an I/O
// error are temporary (space is freed, a mount comes back) within the unit's time budget;
// a permission or a missing directory is the same the next time.
func DiskFault(op string, err error) error {
	if err == nil {
		return nil
	}
	temp := errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EIO)
	return &Fault{Class: dlq.ClassDisk, Op: op, Temp: temp, Err: err}
}

// AsFault returns the Fault in err's chain, if any.
func AsFault(err error) (*Fault, bool) {
	var f *Fault
	ok := errors.As(err, &f)
	return f, ok
}

// Sentinels every implementation returns (wrapped) for the same conditions.
var (
	// ErrNotFound: a record asked for does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrNothingToResume: StartRun with Resume found no unfinished run of the flow.
	ErrNothingToResume = errors.New("store: no unfinished run to resume")
	// ErrRunBusy: HoldRun found the run executed by another process.
	ErrRunBusy = errors.New("store: the run is being executed by another process")
	// ErrFlowBusy: StartRun found a run of the same flow going in another process, on a
	// store that runs one flow at a time (a GeoPackage file has one writer).
	ErrFlowBusy = errors.New("store: a run of this flow is going on in another process; wait for it to end, or use PostgreSQL to run flows side by side")
	// ErrServerBusy: another geoflow serve holds a store that takes one server at a time.
	ErrServerBusy = errors.New("store: another geoflow serve is using this store; a GeoPackage file takes one server, PostgreSQL takes several")
	// ErrNoTransform: CountFeatures cannot bring a lon/lat box into the table's CRS (a
	// store without PROJ); the completeness check is then skipped, and says so.
	ErrNoTransform = errors.New("store: cannot transform a lon/lat box into the table's CRS")
	// ErrMigrationsPending: the schema is behind the binary.
	ErrMigrationsPending = errors.New("store: database migrations pending")
)
