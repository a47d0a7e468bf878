package postgis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoflow/geoflow/store"
)

// distributedRun records a distributed run of one task with units u000..u(n-1), each
// enqueued as a job.
func distributedRun(t *testing.T, s *Store, n int) int64 {
	t.Helper()
	ctx := context.Background()
	run, err := s.StartRun(ctx, store.RunStart{Flow: "pool", FlowFile: "/flows/pool.yaml", Distributed: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	if err := s.SetTaskState(ctx, run.ID, "a", "fake", "running", ""); err != nil {
		t.Fatal(err)
	}
	units := make([]store.Unit, n)
	for i := range units {
		units[i] = store.Unit{Key: fmt.Sprintf("u%03d", i)}
	}
	if err := s.AddUnits(ctx, run.ID, "a", units); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

func mustExec(t *testing.T, s *Store, sql string, args ...any) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestRescueUnits: the units of a worker taken for dead (silent, stopped, started again
// since it took them, or never seen) are available again at once, the lost attempt
// recorded as River's rescuer records it; a job whose attempts are spent is given up; a
// live worker's units and jobs not running are left alone; a second rescue finds nothing.
func TestRescueUnits(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	distributedRun(t, s, 8)
	mustExec(t, s, `INSERT INTO geoflow_workers (id, hostname, pid, concurrency, started_at, seen_at, stopped_at) VALUES
		('gone', 'h', 1, 4, now() - interval '1 hour', now() - interval '20 seconds', NULL),
		('live', 'h', 2, 4, now() - interval '1 hour', now() - interval '2 seconds', NULL),
		('stopped', 'h', 3, 4, now() - interval '1 hour', now(), now()),
		('again', 'h', 4, 4, now() - interval '10 seconds', now(), NULL)`)
	tests := []struct {
		name, key, worker string
		attempt           int
		attemptedAgo      string
		want              string // the job's state after the rescue
	}{
		{"silent worker", "u000", "gone", 1, "30 seconds", "available"},
		{"live worker", "u001", "live", 1, "30 seconds", "running"},
		{"stopped worker", "u002", "stopped", 3, "30 seconds", "available"},
		{"worker started again since", "u003", "again", 1, "1 minute", "available"},
		{"worker never seen", "u004", "nobody", 1, "1 second", "available"},
		{"attempts spent", "u005", "gone", unitMaxAttempts, "30 seconds", "discarded"},
		{"live worker, another take", "u006", "again", 2, "1 second", "running"},
		{"not running", "u007", "", 0, "", "available"},
	}
	for _, tt := range tests {
		if tt.worker == "" {
			continue
		}
		mustExec(t, s, `UPDATE river_job SET state = 'running', attempt = $2, attempted_by = ARRAY['w0', $3],
			attempted_at = now() - $4::interval WHERE args->>'key' = $1`, tt.key, tt.attempt, tt.worker, tt.attemptedAgo)
	}

	n, workers, err := s.RescueUnits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(workers)
	if n != 5 || !slices.Equal(workers, []string{"again", "gone", "nobody", "stopped"}) {
		t.Errorf("rescued %d units of %v, want 5 of [again gone nobody stopped]", n, workers)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var state string
			var attempt, rescues int
			var errs []string
			var finalized, scheduledNow bool
			err := s.pool.QueryRow(ctx, `SELECT state, attempt, coalesce((metadata->>'river:rescue_count')::int, 0),
				coalesce(array(SELECT e->>'error' || ' #' || (e->>'attempt') FROM unnest(errors) e), '{}'),
				finalized_at IS NOT NULL, scheduled_at > now() - interval '1 minute'
				FROM river_job WHERE args->>'key' = $1`, tt.key).Scan(&state, &attempt, &rescues, &errs, &finalized, &scheduledNow)
			if err != nil {
				t.Fatal(err)
			}
			if state != tt.want {
				t.Errorf("state %s, want %s", state, tt.want)
			}
			rescued := tt.worker != "" && tt.want != "running"
			if !rescued {
				if rescues != 0 || len(errs) != 0 {
					t.Errorf("rescues %d, errors %v: want the job untouched", rescues, errs)
				}
				return
			}
			want := fmt.Sprintf("its worker %s was taken for dead (no report for 15s) #%d", tt.worker, tt.attempt)
			if attempt != tt.attempt || rescues != 1 || len(errs) != 1 || errs[0] != want {
				t.Errorf("attempt %d, rescues %d, errors %q; want attempt %d kept, 1 rescue, error %q", attempt, rescues, errs, tt.attempt, want)
			}
			if finalized != (tt.want == "discarded") || (tt.want == "available" && !scheduledNow) {
				t.Errorf("finalized %v, scheduled now %v", finalized, scheduledNow)
			}
		})
	}
	if n, _, err := s.RescueUnits(ctx); err != nil || n != 0 {
		t.Errorf("a second rescue: %d units (%v), want none", n, err)
	}
}

// TestTakenBackUnitWritesNothing: a worker whose unit was taken back while it was silent
// (its unit given to the pool again and executed by another take) has that unit's
// context cancelled at its next report, with store.ErrUnitTaken as the cause, and its
// writes refused; the unit is committed once, by the take that holds its job, and the
// job ends completed with the lost attempt in its errors.
func TestTakenBackUnitWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	distributedRun(t, s, 1)

	var calls atomic.Int32
	started := make(chan struct{})
	stale := make(chan [3]error, 1) // the first execution's cause, then its writes' errors
	fn := func(ctx context.Context, job store.UnitJob) error {
		if calls.Add(1) > 1 {
			_, err := commitUnit(ctx, s, job.Ref, noWrite)
			return err
		}
		close(started)
		<-ctx.Done() // until the worker finds its unit taken back
		final := context.WithoutCancel(ctx)
		_, commit := commitUnit(final, s, job.Ref, noWrite)
		end := s.EndUnit(final, job.Ref, store.Interrupted, "interrupted")
		stale <- [3]error{context.Cause(ctx), commit, end}
		return errors.Join(commit, end)
	}
	wctx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() {
		worked <- s.Work(wctx, store.WorkConfig{ID: "w1", Hostname: "test", Concurrency: 2, Grace: time.Second, RescueAfter: time.Minute}, fn)
	}()
	defer func() {
		stop()
		if err := <-worked; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the unit was never executed")
	}
	// The worker falls silent, as a paused process does, and is taken for dead (by the
	// test, or by the worker itself if it looks between the two statements).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var rescued int64
		if err := s.pool.QueryRow(ctx, "SELECT coalesce(cardinality(errors), 0) FROM river_job").Scan(&rescued); err != nil {
			t.Fatal(err)
		}
		if rescued > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the silent worker's unit was never rescued")
		}
		mustExec(t, s, "UPDATE geoflow_workers SET seen_at = now() - interval '1 minute' WHERE id = 'w1'")
		if _, _, err := s.RescueUnits(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got [3]error
	select {
	case got = <-stale:
	case <-time.After(store.WorkerReport + 10*time.Second):
		t.Fatal("the taken-back execution was not cancelled at the worker's next report")
	}
	if !errors.Is(got[0], store.ErrUnitTaken) {
		t.Errorf("the taken-back execution's cause: %v, want ErrUnitTaken", got[0])
	}
	if !errors.Is(got[1], store.ErrUnitTaken) || !errors.Is(got[2], store.ErrUnitTaken) {
		t.Errorf("the taken-back execution's commit: %v; its interruption: %v; want ErrUnitTaken for both", got[1], got[2])
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var state, unit string
		var attempts, attempt int
		var errs []string
		err := s.pool.QueryRow(ctx, `SELECT j.state, u.state, u.attempts, j.attempt, array(SELECT e->>'error' FROM unnest(j.errors) e)
			FROM river_job j JOIN geoflow_units u ON u.key = j.args->>'key'`).Scan(&state, &unit, &attempts, &attempt, &errs)
		if err != nil {
			t.Fatal(err)
		}
		if state == "completed" {
			if unit != "done" || attempts != 1 || attempt != 2 || len(errs) != 1 || !strings.Contains(errs[0], "w1 was taken for dead") {
				t.Errorf("unit %s after %d commits, job attempt %d with errors %q; want done once, attempt 2, the lost one recorded", unit, attempts, attempt, errs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s, unit %s: the unit taken back never ended", state, unit)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d executions, want 2 (the taken-back one and its successor)", n)
	}
}
