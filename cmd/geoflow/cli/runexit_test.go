package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/store"
)

// TestRunExit: the exit code and message of geoflow run for each way a run ends, and for
// a run that could not be carried out.
func TestRunExit(t *testing.T) {
	sig := &SignalError{Signal: syscall.SIGTERM}
	down := fmt.Errorf("store gone: %w", engine.ErrStoreDown)
	for _, tt := range []struct {
		name     string
		res      *engine.Result
		err      error
		sig      *SignalError
		wantCode int
		wantMsg  string // a part of the message; "" for none
	}{
		{name: "done", res: &engine.Result{RunID: 1, Status: store.Done}, wantCode: ExitOK},
		{name: "dead letters", res: &engine.Result{RunID: 1, Status: store.Failed, Summary: store.RunSummary{UnitsDead: 2}}, wantCode: ExitDeadLetters},
		{name: "incomplete", res: &engine.Result{RunID: 1, Status: store.Incomplete}, wantCode: ExitIncomplete, wantMsg: "run 1 is incomplete"},
		{name: "a task failed", res: &engine.Result{RunID: 1, Status: store.Failed, FailedTasks: map[string]string{"a": "planning: boom"}},
			wantCode: ExitError, wantMsg: `run 1 failed: task "a": planning: boom`},
		{name: "interrupted by a signal", res: &engine.Result{RunID: 3, Status: store.Interrupted}, sig: sig,
			wantCode: sig.ExitCode(), wantMsg: "interrupted by SIGTERM: run 3 recorded as interrupted; continue it with: geoflow run f.yaml --resume"},
		{name: "store down, recorded", res: &engine.Result{RunID: 4, Status: store.Interrupted, StoreDown: down},
			wantCode: ExitStoreDown, wantMsg: "run 4 recorded as interrupted"},
		{name: "store down, not recorded", err: down, wantCode: ExitStoreDown, wantMsg: "continue it with: geoflow run f.yaml --resume"},
		{name: "a signal while the store was down", err: errors.New("its end could not be recorded"), sig: sig,
			wantCode: sig.ExitCode(), wantMsg: "interrupted by SIGTERM: its end could not be recorded"},
		{name: "cannot run", err: errors.New("migrating the database: refused"), wantCode: ExitError, wantMsg: "migrating the database"},
		{name: "ended otherwise", res: &engine.Result{RunID: 5, Status: store.Failed}, wantCode: ExitError, wantMsg: "run 5 ended failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := runExit(tt.res, tt.err, tt.sig, "f.yaml")
			code, msg := ExitOK, ""
			var ee *exitError
			switch {
			case errors.As(err, &ee):
				code = ee.code
				if ee.err != nil {
					msg = ee.err.Error()
				}
			case err != nil:
				code, msg = ExitError, err.Error()
			}
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) || (tt.wantMsg == "" && msg != "") {
				t.Errorf("runExit = code %d, %q; want %d, %q", code, msg, tt.wantCode, tt.wantMsg)
			}
		})
	}
}
