package cli_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// TestRunSignals sends SIGTERM or SIGINT to a running `geoflow run`: it stops taking new
// units, lets in-flight ones finish, records the run as interrupted and exits 128+signal;
// `--resume` then completes the same run.
func TestRunSignals(t *testing.T) {
	bin := buildGeoflow(t)
	tests := []struct {
		name string
		sig  syscall.Signal
		code int
	}{
		{name: "SIGTERM", sig: syscall.SIGTERM, code: 143},
		{name: "SIGINT", sig: syscall.SIGINT, code: 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, db string) {
				fx := wfsserver.New(wfsserver.Options{Features: 2000, CountDefault: 100, Latency: 30 * time.Millisecond})
				srv := httptest.NewServer(fx)
				defer srv.Close()
				flow := dlqFlow(t, srv.URL)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, "run", flow, "--progress", "off", "--grace", "20s")
				cmd.Env = append(os.Environ(), "GEOFLOW_DATABASE_URL="+db)
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
					if tableExists(t, db, "geoflow_units") &&
						testdb.Count(t, db, "SELECT count(*) FROM geoflow_units WHERE state = 'done'") >= 3 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no unit done after a minute\n%s", out.String())
					}
				}
				sent := time.Now()
				if err := cmd.Process.Signal(tt.sig); err != nil {
					t.Fatal(err)
				}
				err := cmd.Wait()
				var ee *exec.ExitError
				if err == nil || !errorsAs(err, &ee) || ee.ExitCode() != tt.code {
					t.Fatalf("exit %v, want %d\n%s", err, tt.code, out.String())
				}
				if took := time.Since(sent); took > 20*time.Second {
					t.Errorf("took %s to stop, beyond the grace period", took)
				}
				if !strings.Contains(out.String(), "--resume") || !strings.Contains(out.String(), "nterrupted by "+tt.name) {
					t.Errorf("the message does not name %s or say how to continue:\n%s", tt.name, out.String())
				}
				if st := testdb.Query(t, db, "SELECT status FROM geoflow_runs WHERE id = 1")[0][0]; st != "interrupted" {
					t.Errorf("run status %v, want interrupted", st)
				}
				if n := testdb.Count(t, db, "SELECT count(*) FROM geoflow_units WHERE state = 'running'"); n != 0 {
					t.Errorf("%d units left running", n)
				}
				code, stdout, errs := geoflow(t, map[string]string{"GEOFLOW_DATABASE_URL": db}, "run", flow, "--resume", "--progress", "off", "--log-level", "error")
				if code != 0 {
					t.Fatalf("resume: exit %d\n%s%s", code, stdout, errs)
				}
				checkComplete(t, db, featuresIn(fx, harvestArea))
			})
		})
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}
