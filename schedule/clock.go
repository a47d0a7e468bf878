package schedule

import "time"

// Clock is the time a Scheduler reads its schedules by: what time it is, and waiting for
// the next fire time. Options.Clock defaults to the wall clock; a test passes one it moves
// by hand, so that fires happen when it says rather than when seconds have passed.
//
// Only the schedule runs on it. The polls of the flows directory (Watch) and of a queued
// fire's previous run (QueuePoll), the hourly pruning of old fires and Drain stay on the
// wall clock: they pace work against the file system, the database and runs, which all
// keep wall-clock time. Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed on this clock, at
	// once when d <= 0, as time.After does.
	After(d time.Duration) <-chan time.Time
}

// wallClock is the Clock of the time package. A fire loop that stops leaves its After
// timer behind; since Go 1.23 an unreferenced timer is collected without being stopped.
type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
