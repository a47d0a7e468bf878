package server

import (
	"fmt"
	"time"
)

// kind is which of geoflow's long-running processes Run runs.
type kind int

const (
	serveKind  kind = iota // geoflow serve: the scheduler and the web UI
	uiKind                 // geoflow ui: the web UI alone
	workerKind             // geoflow worker: the pool's queue, with /metrics on --listen
)

// stopBudget is how a process's stop spends its --grace, counted from the moment the
// stop begins (Run documents the order of the steps).
type stopBudget struct {
	// drain is how long the scheduler's runs still going may take to finish normally
	// before they are told to stop; 0 for a process without a scheduler.
	drain time.Duration
	// units is how long a run told to stop gives its units in flight to finish (the
	// worker: its units, River's grace); what is left of the grace after drain and units
	// is for recording the run interrupted.
	units time.Duration
	// wait is how long after the stop began the runs and replays the UI started are
	// waited for: the whole grace.
	wait time.Duration
	// http is how long HTTP requests still open get once the rest has stopped: after
	// the grace, not out of it, so that the pages answer for as long as runs are stopping.
	http time.Duration
}

// budgetFor decides how a process of kind k splits grace between the steps of its stop:
//
//   - serve: half of it for the scheduler's runs to finish normally, 40% for their units
//     in flight (and the UI's runs' units) to stop, the last tenth for the bookkeeping
//     after; HTTP gets 2s more.
//   - ui: 80% for the units in flight of the runs started from the UI, the rest for
//     recording them; HTTP gets 2s more.
//   - worker: all of it for its units in flight (then they go back to the queue for the
//     other workers); its /metrics gets 5s more.
func budgetFor(k kind, grace time.Duration) stopBudget {
	switch k {
	case serveKind:
		return stopBudget{drain: grace / 2, units: grace * 2 / 5, wait: grace, http: 2 * time.Second}
	case uiKind:
		return stopBudget{units: grace * 4 / 5, wait: grace, http: 2 * time.Second}
	default:
		return stopBudget{units: grace, wait: grace, http: 5 * time.Second}
	}
}

// httpFatal decides whether serving HTTP failing stops a process of kind k: it does for
// serve and ui, whose HTTP is what operators use; a worker's HTTP serves only its
// metrics, so the worker goes on executing units and the failure is logged.
func httpFatal(k kind) bool { return k != workerKind }

// listenError is what a process of kind k says when it cannot listen on addr, in the
// words of its command's --listen.
func listenError(k kind, addr string, err error) error {
	if k == workerKind {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	return fmt.Errorf("--listen: %w", err)
}
