package dlq

// Class names why a unit of work failed. It is stored in the dead-letter table, so its
// values never change. The vocabulary belongs to the dead-letter model: the rate-limit
// handler (retry) classes source faults with it, the store classes sink faults with it.
type Class string

// The classes of failure. Source faults (the remote server, the network, what it sent):
// http_4xx, http_5xx, rate_limited, timeout, network, truncated, parse, exception_report,
// circuit_open, invalid_request, too_large, rejected, incomplete, budget. The pool's: worker_lost. Sink faults (where output is written): database, disk.
// canceled is the caller's own cancellation, never anyone's failure.
const (
	ClassHTTP4xx         Class = "http_4xx"
	ClassHTTP5xx         Class = "http_5xx"
	ClassRateLimited     Class = "rate_limited"
	ClassTimeout         Class = "timeout"
	ClassNetwork         Class = "network"
	ClassTruncated       Class = "truncated"
	ClassParse           Class = "parse"
	ClassExceptionReport Class = "exception_report"
	ClassCircuitOpen     Class = "circuit_open"
	ClassDatabase        Class = "database"
	ClassDisk            Class = "disk"
	ClassCanceled        Class = "canceled"
	ClassInvalid         Class = "invalid_request"
	// ClassTooLarge is a response with a feature beyond the task's limits: retrying
	// gets the same answer.
	ClassTooLarge Class = "too_large"
	// ClassRejected is a unit whose response held features that could not be stored
	// (a curved or malformed geometry, coordinates outside the CRS): the others are
	// stored, the unit is dead so that the harvest shows as incomplete.
	ClassRejected Class = "rejected"
	// ClassWorkerLost is a unit of a distributed run that the pool gave up on: every
	// worker that took it died or was stopped hard while executing it, as many times as
	// a unit's job may be attempted (the unit itself may be what kills them).
	ClassWorkerLost Class = "worker_lost"
	// ClassIncomplete is a tile or batch whose evidence does not add up: the server counted
	// or listed features it neither returned nor was shown not to hold. What came is stored;
	// a replay asks again.
	ClassIncomplete Class = "incomplete"
	// ClassBudget is a unit that would have crossed one of geoflow's own limits on a task
	// (limits.max_units, max_pages_per_tile, max_split_depth, max_listed_ids): the
	// server's answers would have had the task go on without end. The same answers cross
	// it again; raising the limit named in the error is the remedy, when the data really
	// is that large.
	ClassBudget Class = "budget"
)

// Classes returns every class a dead letter can have, in a fixed order. The slice is new
// on each call.
func Classes() []Class {
	return []Class{ClassHTTP4xx, ClassHTTP5xx, ClassRateLimited, ClassTimeout, ClassNetwork,
		ClassTruncated, ClassParse, ClassExceptionReport, ClassCircuitOpen, ClassDatabase,
		ClassDisk, ClassCanceled, ClassInvalid, ClassTooLarge, ClassRejected, ClassWorkerLost, ClassIncomplete, ClassBudget}
}

// Sink tells whether a class is a fault of where output is written (the database, the
// disk) rather than of the source: such faults never count against a host.
func (c Class) Sink() bool { return c == ClassDatabase || c == ClassDisk }

// Classed is implemented by errors that know their class: the rate-limit handler's
// errors, errors a task marked Permanent or Transient, and a store's faults. FromError
// finds it anywhere in an error's chain.
type Classed interface {
	error
	FailureClass() Class
}

// Details is what a dead letter keeps about the source's last answer.
type Details struct {
	Class    Class
	Status   int    // last HTTP status, 0 if none was received
	Snippet  string // first bytes of the last error response body, redacted
	Attempts int    // requests made, including the last
	Method   string
	URL      string // redacted
}

// Detailed is implemented by errors that know the request that failed and how the source
// answered (the rate-limit handler's *retry.Error).
type Detailed interface {
	error
	FailureDetails() Details
}
