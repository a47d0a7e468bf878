package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// resumeBusy tells whether err is how a store refuses to resume a run that another Run
// still holds: PostGIS finds nothing to resume; a GeoPackage refuses the flow's second run
// outright (store.ErrFlowBusy, one run of a flow at a time).
func resumeBusy(err error) bool {
	return errors.Is(err, store.ErrNothingToResume) || errors.Is(err, store.ErrFlowBusy)
}

// testResume: which runs StartRun{Resume: true} takes over, and which it leaves alone.
func testResume(t *testing.T, s store.Store) {
	ctx := t.Context()
	ref := func(run *store.Run, i int) store.UnitRef {
		return store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)}
	}
	tests := []struct {
		name string
		// setup records runs of flow; it returns the id of the run a resume must take,
		// 0 when there is none.
		setup func(t *testing.T, flow string) int64
		// held: the run is held by a Run still open, so a store may also refuse the
		// flow as busy.
		held bool
	}{
		{name: "nothing recorded", setup: func(*testing.T, string) int64 { return 0 }},
		{name: "crashed while running", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 2)
			completeUnit(t, s, ref(run, 0), store.Counts{})
			run.Close() // the process died: nobody holds it, it is still running
			return run.ID
		}},
		{name: "still held by another run", held: true, setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 2)
			return 0
		}},
		{name: "interrupted", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 2)
			if err := s.EndUnit(ctx, ref(run, 1), store.Interrupted, "interrupted by shutdown"); err != nil {
				t.Fatal(err)
			}
			finishRun(t, s, run, store.Interrupted, "")
			return run.ID
		}},
		{name: "done", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 1)
			completeUnit(t, s, ref(run, 0), store.Counts{})
			if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Done, ""); err != nil {
				t.Fatal(err)
			}
			finishRun(t, s, run, store.Done, "")
			return 0
		}},
		{name: "failed with a unit left pending", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 3)
			completeUnit(t, s, ref(run, 0), store.Counts{})
			recordDead(t, s, flow, run.ID, "a", 1, dlq.ClassHTTP5xx, "")
			if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Failed, ""); err != nil {
				t.Fatal(err)
			}
			finishRun(t, s, run, store.Failed, "")
			return run.ID
		}},
		{name: "failed with a unit failed and no dead letter", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 2)
			completeUnit(t, s, ref(run, 0), store.Counts{})
			if err := s.EndUnit(ctx, ref(run, 1), store.Failed, "the database went away"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Failed, ""); err != nil {
				t.Fatal(err)
			}
			finishRun(t, s, run, store.Failed, "")
			return run.ID
		}},
		{name: "failed with every open unit dead-lettered", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			addUnits(t, s, run.ID, "a", 3)
			completeUnit(t, s, ref(run, 0), store.Counts{})
			recordDead(t, s, flow, run.ID, "a", 1, dlq.ClassHTTP5xx, "")
			recordDead(t, s, flow, run.ID, "a", 2, dlq.ClassParse, "")
			if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Failed, ""); err != nil {
				t.Fatal(err)
			}
			finishRun(t, s, run, store.Failed, "")
			return 0
		}},
		{name: "failed while planning", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow})
			if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Failed, "listing the layers failed"); err != nil {
				t.Fatal(err)
			}
			finishRun(t, s, run, store.Failed, "")
			return run.ID
		}},
		{name: "an older interrupted run behind a done one", setup: func(t *testing.T, flow string) int64 {
			old := startRun(t, s, store.RunStart{Flow: flow})
			finishRun(t, s, old, store.Interrupted, "")
			done := startRun(t, s, store.RunStart{Flow: flow})
			finishRun(t, s, done, store.Done, "")
			return old.ID
		}},
		{name: "the latest of two crashed runs", setup: func(t *testing.T, flow string) int64 {
			old := startRun(t, s, store.RunStart{Flow: flow})
			old.Close()
			latest := startRun(t, s, store.RunStart{Flow: flow})
			latest.Close()
			return latest.ID
		}},
		{name: "only another flow's run", setup: func(t *testing.T, flow string) int64 {
			run := startRun(t, s, store.RunStart{Flow: flow + "-other"})
			finishRun(t, s, run, store.Interrupted, "")
			return 0
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flow := "flow" + unitKey(i)
			want := tt.setup(t, flow)
			run, err := s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true})
			switch {
			case want == 0 && tt.held:
				if !resumeBusy(err) {
					t.Fatalf("resuming a run another Run holds: %+v, %v; want store.ErrNothingToResume or store.ErrFlowBusy", run, err)
				}
				return
			case want == 0:
				if !errors.Is(err, store.ErrNothingToResume) {
					t.Fatalf("resume: %+v, %v; want store.ErrNothingToResume", run, err)
				}
				return
			case err != nil:
				t.Fatalf("resume: %v; want run %d", err, want)
			}
			t.Cleanup(run.Close)
			if run.ID != want || !run.Resumed || run.Flow != flow {
				t.Fatalf("resume took run %d of %q (resumed %v), want run %d of %q", run.ID, run.Flow, run.Resumed, want, flow)
			}
			if info, err := s.RunInfo(ctx, run.ID); err != nil || info.Status != store.Running {
				t.Errorf("resumed run is %q (%v), want running", info.Status, err)
			}
			// The resume holds the run now: nobody else executes it or resumes it.
			if h, err := s.HoldRun(ctx, run.ID); !errors.Is(err, store.ErrRunBusy) {
				h.Close()
				t.Errorf("holding a resumed run: %v, want store.ErrRunBusy", err)
			}
			// Resuming again never takes the same run (it may take an older one).
			again, err := s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true})
			switch {
			case err == nil:
				again.Close()
				if again.ID == run.ID {
					t.Errorf("resuming again took the resumed run %d a second time", run.ID)
				}
			case !resumeBusy(err):
				t.Errorf("resuming again: %v, want store.ErrNothingToResume or store.ErrFlowBusy", err)
			}
		})
	}
}

// testResumeRestoresRun: a resumed run carries what the run recorded when it first
// started, whatever the resume asks for.
func testResumeRestoresRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	area := &orb.Bound{Min: orb.Point{4.25, 50.5}, Max: orb.Point{4.5, 50.75}}
	sched := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	first := startRun(t, s, store.RunStart{Flow: "parcels", FlowFile: "/flows/parcels.yaml", FlowText: "name: parcels\n",
		FlowHash: "abc", Area: area, OnlyTasks: []string{"a", "b"}, Trigger: store.TriggerSchedule, ScheduledFor: &sched})
	finishRun(t, s, first, store.Interrupted, "interrupted by shutdown")

	run, err := s.StartRun(ctx, store.RunStart{Flow: "parcels", Resume: true, FlowFile: "/elsewhere.yaml", FlowText: "name: changed\n",
		FlowHash: "def", Area: &orb.Bound{Max: orb.Point{1, 1}}, OnlyTasks: []string{"c"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	if run.ID != first.ID || !run.Resumed {
		t.Fatalf("resumed run %d (resumed %v), want %d", run.ID, run.Resumed, first.ID)
	}
	if !sameBound(run.Area, area) || !slices.Equal(run.OnlyTasks, []string{"a", "b"}) ||
		run.FlowFile != "/flows/parcels.yaml" || run.FlowText != "name: parcels\n" || run.FlowHash != "abc" {
		t.Errorf("resumed run: area %s tasks %v flow %q %q %q; want those recorded when it first started",
			fmtBound(run.Area), run.OnlyTasks, run.FlowFile, run.FlowText, run.FlowHash)
	}
	near(t, "resumed run's StartedAt", run.StartedAt, first.StartedAt, roundTrip)
	rec, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != store.Running || rec.FinishedAt != nil || rec.Error != "" || rec.Trigger != store.TriggerSchedule {
		t.Errorf("resumed run = %+v, want running, not finished, no error, its trigger kept", rec)
	}
	nearPtr(t, "resumed run's ScheduledFor", rec.ScheduledFor, sched, roundTrip)

	// A run recorded with nothing optional resumes with nothing, whatever the resume asks.
	plain := startRun(t, s, store.RunStart{Flow: "roads"})
	plain.Close()
	run, err = s.StartRun(ctx, store.RunStart{Flow: "roads", Resume: true, Area: area, OnlyTasks: []string{"c"}, FlowText: "x"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	if run.ID != plain.ID || run.Area != nil || run.OnlyTasks != nil || run.FlowText != "" || run.FlowFile != "" || run.FlowHash != "" {
		t.Errorf("resumed run %d: area %s tasks %v flow %q %q %q; want run %d with nothing optional",
			run.ID, fmtBound(run.Area), run.OnlyTasks, run.FlowFile, run.FlowText, run.FlowHash, plain.ID)
	}
}

// testResumeReopensUnits: a resume sends the units a crash or a lost store left failed
// (without a dead letter) or interrupted back to pending; done and dead-lettered units
// stay as they are.
func testResumeReopensUnits(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 5)
	ref := func(i int) store.UnitRef { return store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)} }
	completeUnit(t, s, ref(0), store.Counts{Inserted: 1})
	if err := s.EndUnit(ctx, ref(1), store.Failed, "the database went away"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndUnit(ctx, ref(2), store.Interrupted, "interrupted by shutdown"); err != nil {
		t.Fatal(err)
	}
	dead := recordDead(t, s, "parcels", run.ID, "a", 3, dlq.ClassHTTP4xx, "")
	// u004 was never started.
	if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Failed, ""); err != nil {
		t.Fatal(err)
	}
	finishRun(t, s, run, store.Failed, "")

	resumed, err := s.StartRun(ctx, store.RunStart{Flow: "parcels", Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(resumed.Close)
	if resumed.ID != run.ID {
		t.Fatalf("resumed run %d, want %d", resumed.ID, run.ID)
	}
	for i, want := range []store.State{store.Done, store.Pending, store.Pending, store.Failed, store.Pending} {
		if _, got, err := s.Unit(ctx, ref(i)); err != nil || got != want {
			t.Errorf("unit %s after the resume is %q (%v), want %q", unitKey(i), got, err, want)
		}
	}
	open, err := s.OpenUnits(ctx, run.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range open {
		keys = append(keys, u.Key)
	}
	if want := []string{unitKey(1), unitKey(2), unitKey(3), unitKey(4)}; !slices.Equal(keys, want) {
		t.Errorf("open units after the resume %v, want %v", keys, want)
	}
	if e, err := s.GetDeadLetter(ctx, dead); err != nil || e.Status != dlq.StatusOpen {
		t.Errorf("the dead letter of u003 is %q (%v), want still open", e.Status, err)
	}
}

// testHoldRun: HoldRun takes a run nobody holds, and refuses with store.ErrRunBusy one
// that a Run (started, resumed or held) still holds.
func testHoldRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "busy"})
	if h, err := s.HoldRun(ctx, run.ID); !errors.Is(err, store.ErrRunBusy) {
		h.Close()
		t.Fatalf("holding a run its StartRun holds: %v, want store.ErrRunBusy", err)
	}
	run.Close()
	h, err := s.HoldRun(ctx, run.ID)
	if err != nil {
		t.Fatalf("holding a released run: %v", err)
	}
	if h.ID != run.ID {
		t.Errorf("HoldRun returned run %d, want %d", h.ID, run.ID)
	}
	if h2, err := s.HoldRun(ctx, run.ID); !errors.Is(err, store.ErrRunBusy) {
		h2.Close()
		t.Errorf("holding a held run: %v, want store.ErrRunBusy", err)
	}
	// A held run is executed by its holder: a resume leaves it alone.
	if r, err := s.StartRun(ctx, store.RunStart{Flow: "busy", Resume: true}); !errors.Is(err, store.ErrNothingToResume) {
		r.Close()
		t.Errorf("resuming a held run: %+v, %v; want store.ErrNothingToResume", r, err)
	}
	h.Close()
	h.Close() // Close is safe to call again
	h, err = s.HoldRun(ctx, run.ID)
	if err != nil {
		t.Fatalf("holding the run again after its release: %v", err)
	}
	h.Close()
}

// testCrashedRuns: a run recorded as running that no process holds (its process was
// killed) reads as crashed in the history, listed and filtered so; one still held reads
// running. --resume=ID continues the run named, not the latest; a run that cannot be
// resumed (done) is refused with store.ErrNothingToResume.
func testCrashedRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	flow := "crashes"
	older := startRun(t, s, store.RunStart{Flow: flow})
	older.Close() // killed
	latest := startRun(t, s, store.RunStart{Flow: flow})
	latest.Close() // killed too
	held := startRun(t, s, store.RunStart{Flow: flow + "_held"})
	t.Cleanup(held.Close)

	status := func(id int64) store.State {
		r, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	if st := status(older.ID); st != store.Crashed {
		t.Errorf("a killed run reads %q, want crashed", st)
	}
	if st := status(held.ID); st != store.Running {
		t.Errorf("a held run reads %q, want running", st)
	}
	crashed, err := s.ListRuns(ctx, store.RunFilter{Status: string(store.Crashed)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range crashed {
		if r.Status != store.Crashed {
			t.Errorf("--status crashed listed run %d as %q", r.ID, r.Status)
		}
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, older.ID) || !slices.Contains(ids, latest.ID) || slices.Contains(ids, held.ID) {
		t.Errorf("crashed runs listed: %v; want %d and %d, not the held %d", ids, older.ID, latest.ID, held.ID)
	}
	running, err := s.ListRuns(ctx, store.RunFilter{Status: string(store.Running)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range running {
		if r.ID == older.ID || r.ID == latest.ID {
			t.Errorf("--status running listed the crashed run %d", r.ID)
		}
	}

	// --resume=ID: the older one, though a later one is resumable too.
	run, err := s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true, RunID: older.ID})
	if err != nil || run.ID != older.ID || !run.Resumed {
		t.Fatalf("resuming run %d by id: %+v, %v", older.ID, run, err)
	}
	if st := status(older.ID); st != store.Running {
		t.Errorf("the resumed run reads %q, want running", st)
	}
	finishRun(t, s, run, store.Done, "")
	if _, err := s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true, RunID: older.ID}); !errors.Is(err, store.ErrNothingToResume) ||
		!strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("resuming a done run by id: %v; want store.ErrNothingToResume saying so", err)
	}
	if run, err := s.StartRun(ctx, store.RunStart{Flow: flow, Resume: true}); err != nil || run.ID != latest.ID {
		t.Errorf("--resume without an id: %+v, %v; want the latest, run %d", run, err, latest.ID)
	} else {
		run.Close()
	}
}
