package cli

import (
	"errors"
	"testing"

	"github.com/geoflow/geoflow/flows/engine"
)

// TestReplayExit: a replay whose units were not sent (their host's breaker stayed open)
// does not exit as one whose units failed again.
func TestReplayExit(t *testing.T) {
	ok := []engine.ReplayOutcome{{OK: true}}
	open := []engine.ReplayOutcome{{OK: true}, {Error: "not sent: host h breaker open", NotSent: true}}
	tests := []struct {
		name string
		res  engine.ReplayResult
		want int
	}{
		{name: "every unit succeeded", res: engine.ReplayResult{Outcomes: ok, Units: 1}, want: ExitOK},
		{name: "a unit failed again", res: engine.ReplayResult{Outcomes: []engine.ReplayOutcome{{Error: "failed again"}}, Units: 1, Dead: 1}, want: ExitDeadLetters},
		{name: "units not sent, none failed again", res: engine.ReplayResult{Outcomes: open, Units: 2, NotSent: 1}, want: ExitNotSent},
		{name: "failed again and not sent: failed again wins", res: engine.ReplayResult{Outcomes: open, Units: 3, Dead: 1, NotSent: 1}, want: ExitDeadLetters},
		{name: "an entry that could not be replayed", res: engine.ReplayResult{Outcomes: []engine.ReplayOutcome{{Error: "flow has no task"}}}, want: ExitDeadLetters},
		{name: "all succeeded, a run incomplete", res: engine.ReplayResult{Outcomes: ok, Units: 1, Incomplete: []int64{4}}, want: ExitIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := replayExit(&tt.res)
			got := ExitOK
			var ee *exitError
			if errors.As(err, &ee) {
				got = ee.code
			}
			if got != tt.want {
				t.Errorf("replayExit = %v (exit %d), want exit %d", err, got, tt.want)
			}
		})
	}
}
