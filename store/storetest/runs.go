package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// recordDead records the i-th unit of task as a dead letter of class, its request to url.
func recordDead(t *testing.T, s store.Store, flow string, runID int64, task string, i int, class dlq.Class, url string) int64 {
	t.Helper()
	id, err := s.RecordDeadLetter(t.Context(), store.UnitRef{RunID: runID, TaskID: task, Key: unitKey(i)}, dlq.Entry{
		Flow: flow, BBox: unitBBox(i), Class: class, Error: "it broke", HTTPStatus: 503, Attempts: 3,
		Request: dlq.Request{Method: "GET", URL: url}, Snippet: "<html>busy</html>",
	})
	if err != nil {
		t.Fatalf("recording unit %s of run %d as a dead letter: %v", unitKey(i), runID, err)
	}
	return id
}

// finishRun records run's outcome and releases it.
func finishRun(t *testing.T, s store.Store, run *store.Run, status store.State, errMsg string) store.RunSummary {
	t.Helper()
	sum, err := s.FinishRun(t.Context(), run.ID, status, errMsg)
	if err != nil {
		t.Fatalf("finishing run %d as %s: %v", run.ID, status, err)
	}
	run.Close()
	return sum
}

// testStartRun: a new run records what it was started with, RunInfo and GetRun read it
// back, and a run that does not exist is store.ErrNotFound.
func testStartRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	area := &orb.Bound{Min: orb.Point{4.25, 50.5}, Max: orb.Point{4.5, 50.75}}
	before := time.Now()
	st := store.RunStart{Flow: "parcels", FlowFile: "/flows/parcels.yaml", FlowText: "name: parcels\ntasks: []\n",
		FlowHash: "9f86d081884c7d65", Area: area, OnlyTasks: []string{"a", "b"}}
	run := startRun(t, s, st)
	if run.ID <= 0 || run.Flow != "parcels" || run.Resumed {
		t.Errorf("new run: id %d flow %q resumed %v; want a positive id, parcels, not resumed", run.ID, run.Flow, run.Resumed)
	}
	near(t, "StartedAt", run.StartedAt, before, timeSlack)
	if !sameBound(run.Area, area) || !slices.Equal(run.OnlyTasks, st.OnlyTasks) ||
		run.FlowFile != st.FlowFile || run.FlowText != st.FlowText || run.FlowHash != st.FlowHash {
		t.Errorf("new run: area %s tasks %v flow %q %q %q; want what it was started with", fmtBound(run.Area), run.OnlyTasks,
			run.FlowFile, run.FlowText, run.FlowHash)
	}

	info, err := s.RunInfo(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != run.ID || info.Flow != "parcels" || info.Status != store.Running || !sameBound(info.Area, area) ||
		info.FlowFile != st.FlowFile || info.FlowText != st.FlowText || info.FlowHash != st.FlowHash {
		t.Errorf("RunInfo = %+v (area %s), want the run as started, running", info, fmtBound(info.Area))
	}
	rec, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != run.ID || rec.Flow != "parcels" || rec.Status != store.Running || rec.Trigger != store.TriggerManual ||
		rec.ScheduledFor != nil || rec.FinishedAt != nil || rec.Error != "" || len(rec.Tasks) != 0 {
		t.Errorf("GetRun = %+v, want a running manual run with no tasks", rec)
	}
	near(t, "GetRun StartedAt", rec.StartedAt, run.StartedAt, roundTrip)

	// Nothing optional given: no area, no flow text, and the trigger as given.
	plain := startRun(t, s, store.RunStart{Flow: "roads", Trigger: store.TriggerReplay})
	if plain.ID <= run.ID {
		t.Errorf("the second run has id %d, want more than the first's %d", plain.ID, run.ID)
	}
	info, err = s.RunInfo(ctx, plain.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Area != nil || info.FlowFile != "" || info.FlowText != "" || info.FlowHash != "" || info.Flow != "roads" {
		t.Errorf("RunInfo of a run started with nothing optional = %+v", info)
	}
	if rec, err := s.GetRun(ctx, plain.ID); err != nil || rec.Trigger != store.TriggerReplay {
		t.Errorf("GetRun: trigger %q (%v), want %q", rec.Trigger, err, store.TriggerReplay)
	}

	missing := plain.ID + 1000
	if _, err := s.RunInfo(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RunInfo of a missing run: %v, want store.ErrNotFound", err)
	}
	if _, err := s.GetRun(ctx, missing); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun of a missing run: %v, want store.ErrNotFound", err)
	}
}

// testFinishRun: FinishRun sums the run's units over its tasks (done, dead, feature
// counts and bytes), and GetRun shows what it recorded.
func testFinishRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 4)
	addUnits(t, s, run.ID, "b", 1)
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}, store.Counts{Inserted: 3, Skipped: 1, Updated: 2, Bytes: 100})
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(1)}, store.Counts{Inserted: 1, Bytes: 50})
	recordDead(t, s, "parcels", run.ID, "a", 2, dlq.ClassHTTP5xx, "https://example.com/wfs")
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "b", Key: unitKey(0)}, store.Counts{Skipped: 4, Bytes: 7})
	// a's u003 is left pending.

	before := time.Now()
	sum, err := s.FinishRun(ctx, run.ID, store.Failed, "1 unit failed")
	if err != nil {
		t.Fatal(err)
	}
	got := sum
	got.StartedAt, got.FinishedAt = time.Time{}, nil
	want := store.RunSummary{ID: run.ID, Flow: "parcels", Status: store.Failed, UnitsTotal: 5, UnitsDone: 3, UnitsDead: 1,
		Inserted: 4, Skipped: 5, Updated: 2, Bytes: 157}
	if got != want {
		t.Errorf("FinishRun = %+v\nwant %+v", got, want)
	}
	near(t, "summary StartedAt", sum.StartedAt, run.StartedAt, roundTrip)
	nearPtr(t, "summary FinishedAt", sum.FinishedAt, before, timeSlack)
	if sum.FinishedAt != nil && sum.FinishedAt.Before(sum.StartedAt) {
		t.Errorf("finished at %v, before it started at %v", sum.FinishedAt, sum.StartedAt)
	}

	rec, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != store.Failed || rec.Error != "1 unit failed" || rec.UnitsTotal != 5 || rec.UnitsDone != 3 || rec.UnitsDead != 1 ||
		rec.FeaturesInserted != 4 || rec.FeaturesSkipped != 5 || rec.FeaturesUpdated != 2 {
		t.Errorf("GetRun after FinishRun = %+v, want the summary's totals", rec)
	}
	if sum.FinishedAt != nil {
		nearPtr(t, "GetRun FinishedAt", rec.FinishedAt, *sum.FinishedAt, roundTrip)
	}
	if info, err := s.RunInfo(ctx, run.ID); err != nil || info.Status != store.Failed {
		t.Errorf("RunInfo status %q (%v), want failed", info.Status, err)
	}

	// A run finished again (a resume that ended) records its new outcome.
	sum, err = s.FinishRun(ctx, run.ID, store.Done, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.Done || sum.UnitsTotal != 5 || sum.Bytes != 157 {
		t.Errorf("FinishRun again = %+v, want done with the same totals", sum)
	}
	if rec, err := s.GetRun(ctx, run.ID); err != nil || rec.Status != store.Done || rec.Error != "" {
		t.Errorf("GetRun after finishing again: status %q error %q (%v), want done and no error", rec.Status, rec.Error, err)
	}
	if _, err := s.FinishRun(ctx, run.ID+1000, store.Done, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FinishRun of a missing run: %v, want store.ErrNotFound", err)
	}
}

// testTaskState: a task never recorded is pending; SetTaskState records state, type,
// times and error, and rolls the task's units up into GetRun's tasks.
func testTaskState(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	other := startRun(t, s, store.RunStart{Flow: "roads"})
	state := func(runID int64, task string) store.State {
		t.Helper()
		st, err := s.TaskState(ctx, runID, task)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	set := func(task, typ string, st store.State, msg string) {
		t.Helper()
		if err := s.SetTaskState(ctx, run.ID, task, typ, st, msg); err != nil {
			t.Fatal(err)
		}
	}
	task := func(name string) store.TaskRecord {
		t.Helper()
		rec, err := s.GetRun(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range rec.Tasks {
			if tr.Task == name {
				return tr
			}
		}
		t.Fatalf("GetRun has no task %q: %+v", name, rec.Tasks)
		return store.TaskRecord{}
	}

	if st := state(run.ID, "a"); st != store.Pending {
		t.Errorf("a task never recorded is %q, want pending", st)
	}
	before := time.Now()
	set("a", "wfs", store.Running, "")
	// A task is recorded before its units (PostGIS keys units on their task).
	if err := s.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: unitKey(0)}, {Key: unitKey(1)}, {Key: unitKey(2)}}); err != nil {
		t.Fatal(err)
	}
	if st := state(run.ID, "a"); st != store.Running {
		t.Errorf("task a is %q, want running", st)
	}
	if st := state(other.ID, "a"); st != store.Pending {
		t.Errorf("task a of another run is %q, want pending", st)
	}
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}, store.Counts{Inserted: 2, Skipped: 1, Updated: 1})
	recordDead(t, s, "parcels", run.ID, "a", 1, dlq.ClassTimeout, "")
	// Task "0" sorts before "a" by name, yet is listed after it: it has not started.
	set("0", "tiles", store.Pending, "")

	rec, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tr := range rec.Tasks {
		names = append(names, tr.Task)
	}
	if !slices.Equal(names, []string{"a", "0"}) {
		t.Errorf("GetRun tasks %v, want [a 0]: started ones first, then those not started", names)
	}
	a := task("a")
	if a.Type != "wfs" || a.State != store.Running || a.FinishedAt != nil || a.Error != "" ||
		a.UnitsTotal != 3 || a.UnitsDone != 1 || a.UnitsDead != 1 || a.FeaturesInserted != 2 || a.FeaturesSkipped != 1 {
		t.Errorf("running task a = %+v, want wfs, running, live counts 3 units, 1 done, 1 dead, 2 inserted, 1 skipped", a)
	}
	nearPtr(t, "a's StartedAt", a.StartedAt, before, timeSlack)
	pending := task("0")
	if pending.Type != "tiles" || pending.State != store.Pending || pending.StartedAt != nil || pending.FinishedAt != nil || pending.UnitsTotal != 0 {
		t.Errorf("pending task 0 = %+v, want tiles, pending, never started", pending)
	}

	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(2)}, store.Counts{Inserted: 5})
	set("a", "wfs", store.Failed, "1 unit failed")
	if st := state(run.ID, "a"); st != store.Failed {
		t.Errorf("task a is %q, want failed", st)
	}
	a = task("a")
	if a.State != store.Failed || a.Error != "1 unit failed" || a.UnitsTotal != 3 || a.UnitsDone != 2 || a.UnitsDead != 1 ||
		a.FeaturesInserted != 7 || a.FeaturesSkipped != 1 {
		t.Errorf("failed task a = %+v, want its units rolled up: 3 units, 2 done, 1 dead, 7 inserted, 1 skipped", a)
	}
	nearPtr(t, "a's FinishedAt", a.FinishedAt, time.Now(), timeSlack)
	nearPtr(t, "a's StartedAt after it failed", a.StartedAt, before, timeSlack)

	set("0", "tiles", store.UpstreamFailed, "task a failed")
	pending = task("0")
	if pending.State != store.UpstreamFailed || pending.Error != "task a failed" || pending.StartedAt != nil || pending.FinishedAt == nil {
		t.Errorf("task 0 = %+v, want upstream_failed, its error, finished without starting", pending)
	}

	// A resume runs the task again: running, no longer finished, no error.
	set("a", "wfs", store.Running, "")
	a = task("a")
	if a.State != store.Running || a.FinishedAt != nil || a.Error != "" {
		t.Errorf("task a running again = %+v, want running, not finished, no error", a)
	}
	set("a", "wfs", store.Done, "")
	if a = task("a"); a.State != store.Done || a.FinishedAt == nil {
		t.Errorf("task a done = %+v, want done and finished", a)
	}
}

// testListRuns: ListRuns filters by flow and status, caps with a limit, lists latest
// first, and counts a running run's units live.
func testListRuns(t *testing.T, s store.Store) {
	ctx := t.Context()
	p1 := startRun(t, s, store.RunStart{Flow: "p"})
	addUnits(t, s, p1.ID, "a", 1)
	completeUnit(t, s, store.UnitRef{RunID: p1.ID, TaskID: "a", Key: unitKey(0)}, store.Counts{Inserted: 1})
	finishRun(t, s, p1, store.Done, "")
	p2 := startRun(t, s, store.RunStart{Flow: "p"})
	finishRun(t, s, p2, store.Failed, "boom")
	q3 := startRun(t, s, store.RunStart{Flow: "q", Trigger: store.TriggerSchedule})
	addUnits(t, s, q3.ID, "a", 3)
	completeUnit(t, s, store.UnitRef{RunID: q3.ID, TaskID: "a", Key: unitKey(0)}, store.Counts{Inserted: 5, Skipped: 2, Updated: 1})
	recordDead(t, s, "q", q3.ID, "a", 1, dlq.ClassParse, "")

	tests := []struct {
		name string
		f    store.RunFilter
		want []int64
	}{
		{name: "all", f: store.RunFilter{}, want: []int64{q3.ID, p2.ID, p1.ID}},
		{name: "flow", f: store.RunFilter{Flow: "p"}, want: []int64{p2.ID, p1.ID}},
		{name: "status", f: store.RunFilter{Status: "failed"}, want: []int64{p2.ID}},
		{name: "running", f: store.RunFilter{Status: "running"}, want: []int64{q3.ID}},
		{name: "flow and status", f: store.RunFilter{Flow: "p", Status: "done"}, want: []int64{p1.ID}},
		{name: "limit", f: store.RunFilter{Limit: 2}, want: []int64{q3.ID, p2.ID}},
		{name: "no limit", f: store.RunFilter{Limit: -1}, want: []int64{q3.ID, p2.ID, p1.ID}},
		{name: "no such flow", f: store.RunFilter{Flow: "nope"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := s.ListRuns(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range runs {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", tt.f, ids, tt.want)
			}
		})
	}

	byID := func() map[int64]store.RunRecord {
		t.Helper()
		runs, err := s.ListRuns(ctx, store.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]store.RunRecord{}
		for _, r := range runs {
			m[r.ID] = r
		}
		return m
	}
	runs := byID()
	if r := runs[p1.ID]; r.Status != store.Done || r.Flow != "p" || r.UnitsTotal != 1 || r.UnitsDone != 1 || r.FeaturesInserted != 1 || r.FinishedAt == nil {
		t.Errorf("finished run = %+v, want done with its recorded totals", r)
	}
	if r := runs[p2.ID]; r.Status != store.Failed || r.Error != "boom" {
		t.Errorf("failed run = %+v, want failed with error boom", r)
	}
	if r := runs[q3.ID]; r.Status != store.Running || r.Trigger != store.TriggerSchedule || r.FinishedAt != nil ||
		r.UnitsTotal != 3 || r.UnitsDone != 1 || r.UnitsDead != 1 || r.FeaturesInserted != 5 || r.FeaturesSkipped != 2 || r.FeaturesUpdated != 1 {
		t.Errorf("running run = %+v, want live counts: 3 units, 1 done, 1 dead, 5 inserted, 2 skipped, 1 updated", r)
	}
	near(t, "running run's StartedAt", runs[q3.ID].StartedAt, q3.StartedAt, roundTrip)

	completeUnit(t, s, store.UnitRef{RunID: q3.ID, TaskID: "a", Key: unitKey(2)}, store.Counts{Inserted: 10})
	if r := byID()[q3.ID]; r.UnitsDone != 2 || r.FeaturesInserted != 15 {
		t.Errorf("running run after one more unit = %+v, want 2 done and 15 inserted, counted live", r)
	}
}

// testListRunsDefaultLimit: the zero RunFilter lists the latest 100 runs.
func testListRunsDefaultLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	var ids []int64
	for range 101 {
		run := startRun(t, s, store.RunStart{Flow: "p"})
		run.Close()
		ids = append(ids, run.ID)
	}
	runs, err := s.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 100 || runs[0].ID != ids[100] || runs[99].ID != ids[1] {
		t.Errorf("ListRuns with the zero filter: %d runs, want the latest 100", len(runs))
	}
	if runs, err := s.ListRuns(ctx, store.RunFilter{Limit: -1}); err != nil || len(runs) != 101 {
		t.Errorf("ListRuns without a limit: %d runs (%v), want 101", len(runs), err)
	}
}

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
