package postgis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// TestResumeWhatIsLeft: --resume takes a failed run when it has work that is neither done
// nor dead-lettered (a unit whose failure the store could not record, a task that failed
// before planning), and leaves alone one whose only failures are dead letters (dlq replay
// is for those). It records the flow the run started with and hands it back.
func TestResumeWhatIsLeft(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	finish := func(run int64, task string, state store.State) {
		t.Helper()
		if err := s.SetTaskState(ctx, run, task, "fake", state, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FinishRun(ctx, run, store.Failed, ""); err != nil {
			t.Fatal(err)
		}
	}
	resume := func(flow string) (*store.Run, error) {
		r, err := s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true})
		if err == nil {
			t.Cleanup(r.Close)
		}
		return r, err
	}

	// startRun's run is held until the test ends; a crashed process holds nothing.
	crashed := func(flow string) int64 {
		t.Helper()
		run, err := s.StartRun(ctx, store.RunStart{Flow: flow})
		if err != nil {
			t.Fatal(err)
		}
		run.Close()
		if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Running, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: "u000", BBox: unitBBox(0)}, {Key: "u001", BBox: unitBBox(1)}}); err != nil {
			t.Fatal(err)
		}
		return run.ID
	}

	// Only dead letters left: nothing to resume.
	dead := crashed("dead")
	record(t, s, "dead", dead, "a", 0, dlq.ClassHTTP5xx, "")
	if _, err := commitUnit(ctx, s, store.UnitRef{RunID: dead, TaskID: "a", Key: "u001"}, noWrite); err != nil {
		t.Fatal(err)
	}
	finish(dead, "a", store.Failed)
	if _, err := resume("dead"); !errors.Is(err, store.ErrNothingToResume) {
		t.Errorf("a run failed only by dead letters was resumed: %v", err)
	}

	// A unit left pending (its failure could not be recorded): resumable, and the unit is open.
	lost := crashed("lost")
	if _, err := commitUnit(ctx, s, store.UnitRef{RunID: lost, TaskID: "a", Key: "u001"}, noWrite); err != nil {
		t.Fatal(err)
	}
	finish(lost, "a", store.Failed)
	r, err := resume("lost")
	if err != nil || r.ID != lost || !r.Resumed {
		t.Fatalf("resume: %+v %v; want run %d", r, err, lost)
	}
	open, err := s.OpenUnits(ctx, lost, "a")
	if err != nil || len(open) != 1 || open[0].Key != "u000" {
		t.Errorf("open units %v %v; want u000", open, err)
	}

	// A task that failed while planning (no units at all): resumable.
	plan, err := s.StartRun(ctx, store.RunStart{Flow: "plan", FlowText: "name: plan\n", FlowHash: "abc", FlowFile: "/f/plan.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	plan.Close()
	finish(plan.ID, "a", store.Failed)
	r, err = resume("plan")
	if err != nil || r.ID != plan.ID {
		t.Fatalf("resume after a planning failure: %+v %v", r, err)
	}
	if r.FlowText != "name: plan\n" || r.FlowHash != "abc" || r.FlowFile != "/f/plan.yaml" {
		t.Errorf("recorded flow %q %q %q", r.FlowText, r.FlowHash, r.FlowFile)
	}
	info, err := s.RunInfo(ctx, plan.ID)
	if err != nil || info.FlowText != "name: plan\n" {
		t.Errorf("RunInfo: %+v %v", info, err)
	}
}

func noWrite(context.Context, store.UnitTx) (store.Counts, error) { return store.Counts{}, nil }

func TestTranslateTemporary(t *testing.T) {
	tests := []struct {
		code string
		temp bool
	}{
		{"57P01", true}, {"57P03", true}, {"08006", true}, {"40P01", true}, {"53300", true},
		{"23505", false}, {"22P02", false}, {"42P01", false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			if got := temporary(tt.code); got != tt.temp {
				t.Errorf("temporary(%s) = %v, want %v", tt.code, got, tt.temp)
			}
		})
	}
	f, ok := store.AsFault(translate("inserting", errors.New("unexpected EOF")))
	if !ok || !f.Temporary() || f.FailureClass() != dlq.ClassDatabase {
		t.Errorf("a lost connection: %+v", f)
	}
}

// TestOrphanedRuns lists the distributed runs a worker may adopt: recorded running, held
// by no session. A local run whose process died waits for a person's --resume, and runs
// held, interrupted or adopted already are not listed.
func TestOrphanedRuns(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	start := func(flow string, distributed bool) *store.Run {
		t.Helper()
		run, err := s.StartRun(ctx, store.RunStart{Flow: flow, Distributed: distributed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(run.Close)
		return run
	}
	orphan := start("dist", true)
	orphan.Close()
	start("dist_alive", true)
	local := start("local", false)
	local.Close()
	stopped := start("dist_stopped", true)
	if _, err := s.FinishRun(ctx, stopped.ID, store.Interrupted, ""); err != nil {
		t.Fatal(err)
	}
	stopped.Close()
	adopted := start("dist_adopted", true)
	adopted.Close()
	again, err := s.StartRun(ctx, store.RunStart{Flow: "dist_adopted", Resume: true, RunID: adopted.ID, AdoptedBy: "worker w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Close)

	ids, err := s.OrphanedRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != orphan.ID {
		t.Errorf("orphaned runs %v, want [%d]", ids, orphan.ID)
	}
	again.Close() // its adopter died as well: the run is an orphan again
	if ids, err = s.OrphanedRuns(ctx); err != nil || len(ids) != 2 || ids[1] != adopted.ID {
		t.Errorf("orphaned runs %v, %v; want [%d %d]", ids, err, orphan.ID, adopted.ID)
	}
}

// TestRunHeldAfterSessionEnds: a run's hold whose session ended (a restart of the
// database, a cut connection) is taken again when nobody took the run meanwhile, and is
// lost, for good, to a worker that adopted the run first.
func TestRunHeldAfterSessionEnds(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	run, err := s.StartRun(ctx, store.RunStart{Flow: "held", Distributed: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	endSession := func() {
		t.Helper()
		var n int64
		// pg_locks is the cluster's: the lock is this database's (other tests' databases
		// hold run 1 too, and their sessions are not this test's to end).
		err := s.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 2`,
			runLockClass, run.ID).Scan(&n)
		if err != nil || n != 1 {
			t.Fatalf("ending the session that holds run %d: %d ended, %v", run.ID, n, err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if ids, err := s.OrphanedRuns(ctx); err == nil && len(ids) == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the run never read as orphaned after its session ended")
			}
		}
	}
	if held, err := run.Held(ctx); !held || err != nil {
		t.Fatalf("Held on a live session: %v, %v", held, err)
	}
	endSession()
	if held, err := run.Held(ctx); !held || err != nil {
		t.Fatalf("Held after the session ended, nobody else about: %v, %v; want the hold taken again", held, err)
	}
	if ids, err := s.OrphanedRuns(ctx); err != nil || len(ids) != 0 {
		t.Errorf("orphaned runs %v, %v after the hold was taken again; want none", ids, err)
	}
	endSession()
	adopted, err := s.StartRun(ctx, store.RunStart{Flow: "held", Resume: true, RunID: run.ID, AdoptedBy: "worker w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adopted.Close)
	if held, err := run.Held(ctx); held || err != nil {
		t.Errorf("Held after a worker adopted the run: %v, %v; want false", held, err)
	}
	if held, err := adopted.Held(ctx); !held || err != nil {
		t.Errorf("the adopter's Held: %v, %v; want true", held, err)
	}
	adopted.Close()
	if held, err := run.Held(ctx); held || err != nil {
		t.Errorf("Held once the adopter let go: %v, %v; want false (the run is the adopter's)", held, err)
	}
}
