package tasks

import (
	"fmt"
	"strings"

	"github.com/geoflow/geoflow/dlq"
)

// Reject is a feature of a response that the task refused to store: a curved or
// malformed geometry, coordinates outside the CRS's domain, a value of the wrong type.
type Reject struct {
	ID     string // the server's feature id; "" when it had none
	Index  int    // 0-based position in the response, counting refused features
	Reason string
}

// MaxListedRejects is how many refused features a RejectedError lists by name.
const MaxListedRejects = 20

// RejectedError is the dead letter of a unit whose response held features the task
// refused. The features it could store are committed; the unit is dead-lettered so that
// the harvest shows as incomplete (exit 2) and the refusals can be triaged and replayed
// (a fixed server, or a newer geoflow, stores them then).
type RejectedError struct {
	Total    int      // features refused
	Features []Reject // the first MaxListedRejects of them
}

// Add records one refused feature.
func (e *RejectedError) Add(r Reject) {
	e.Total++
	if len(e.Features) < MaxListedRejects {
		e.Features = append(e.Features, r)
	}
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d feature", e.Total)
	if e.Total != 1 {
		b.WriteString("s")
	}
	b.WriteString(" of the response refused (the others are stored):")
	for i, r := range e.Features {
		if i > 0 {
			b.WriteString(";")
		}
		if r.ID != "" {
			fmt.Fprintf(&b, " %q (#%d): %s", r.ID, r.Index, r.Reason)
		} else {
			fmt.Fprintf(&b, " #%d: %s", r.Index, r.Reason)
		}
	}
	if n := e.Total - len(e.Features); n > 0 {
		fmt.Fprintf(&b, "; and %d more", n)
	}
	return b.String()
}

// FailureClass implements dlq.Classed.
func (e *RejectedError) FailureClass() dlq.Class { return dlq.ClassRejected }
