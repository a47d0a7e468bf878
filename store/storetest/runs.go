package storetest

import (
	"errors"
	"reflect"
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
	if !reflect.DeepEqual(got, want) { // no hosts: its units recorded no execution
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

// testIncompleteState: a task and a run record the state incomplete (the schema allows
// it), with the task's reason and finish time, and ListRuns filters by it; the run is
// not one --resume continues (its units are done or dead-lettered).
func testIncompleteState(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "short"})
	addUnits(t, s, run.ID, "a", 2)
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}, store.Counts{Inserted: 3})
	recordDead(t, s, "short", run.ID, "a", 1, dlq.ClassIncomplete, "https://example.com/ogc")
	if err := s.SetTaskState(ctx, run.ID, "a", "ogcapi", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	const why = "incomplete: 2 features missing in 0,0,1,1: the server matched 5 features but 3 distinct features are stored there"
	if err := s.SetTaskState(ctx, run.ID, "a", "ogcapi", store.Incomplete, why); err != nil {
		t.Fatalf("recording a task incomplete: %v", err)
	}
	if st, err := s.TaskState(ctx, run.ID, "a"); err != nil || st != store.Incomplete {
		t.Errorf("TaskState = %q, %v; want incomplete", st, err)
	}
	sum, err := s.FinishRun(ctx, run.ID, store.Incomplete, "")
	if err != nil {
		t.Fatalf("finishing a run incomplete: %v", err)
	}
	if sum.Status != store.Incomplete || sum.UnitsDone != 1 || sum.UnitsDead != 1 {
		t.Errorf("FinishRun = %+v, want incomplete, 1 unit done, 1 dead", sum)
	}
	rec, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != store.Incomplete || len(rec.Tasks) != 1 {
		t.Fatalf("GetRun = %+v, want incomplete with its task", rec)
	}
	if a := rec.Tasks[0]; a.State != store.Incomplete || a.Error != why || a.FinishedAt == nil || a.UnitsDead != 1 {
		t.Errorf("task = %+v, want incomplete, its reason, finished, 1 dead", a)
	}
	other := startRun(t, s, store.RunStart{Flow: "other"})
	if _, err := s.FinishRun(ctx, other.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	runs, err := s.ListRuns(ctx, store.RunFilter{Status: string(store.Incomplete)})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != run.ID {
		t.Errorf("ListRuns(incomplete) = %d runs, want run %d alone", len(runs), run.ID)
	}
	run.Close()
	if r, err := s.StartRun(ctx, store.RunStart{Flow: "short", Resume: true}); !errors.Is(err, store.ErrNothingToResume) {
		r.Close()
		t.Errorf("resuming an incomplete run: %v; want ErrNothingToResume (a replay of its dead letters completes it)", err)
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

// testRunArea: a run started with an area (geoflow run --bbox) lists and shows it; a run
// of the whole extent has none.
func testRunArea(t *testing.T, s store.Store) {
	ctx := t.Context()
	area := &orb.Bound{Min: orb.Point{11.46, 48.06}, Max: orb.Point{11.48, 48.08}}
	full := startRun(t, s, store.RunStart{Flow: "area"})
	finishRun(t, s, full, store.Done, "")
	part := startRun(t, s, store.RunStart{Flow: "area", Area: area})
	finishRun(t, s, part, store.Done, "")
	want := map[int64]*[4]float64{full.ID: nil, part.ID: {11.46, 48.06, 11.48, 48.08}}
	runs, err := s.ListRuns(ctx, store.RunFilter{Flow: "area"})
	if err != nil || len(runs) != 2 {
		t.Fatalf("ListRuns = %+v, %v; want 2 runs", runs, err)
	}
	for _, r := range runs {
		got, err := s.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			got  *[4]float64
		}{{"ListRuns", r.Area}, {"GetRun", got.Area}} {
			if w := want[r.ID]; (c.got == nil) != (w == nil) || (w != nil && *c.got != *w) {
				t.Errorf("%s: run %d area = %v, want %v", c.name, r.ID, c.got, w)
			}
		}
	}
}
