package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/geoflow/geoflow/store"
)

// fireAt is the scheduled time the fire tests use, and hours after it.
func fireAt(hours int) time.Time {
	return time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC).Add(time.Duration(hours) * time.Hour)
}

// listFires returns ListFires as "flow@hour" strings, hours after fireAt(0).
func listFires(t *testing.T, s store.Store, flow string, limit int) []string {
	t.Helper()
	fires, err := s.ListFires(t.Context(), flow, limit)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fires {
		out = append(out, fmt.Sprintf("%s@%g", f.Flow, f.ScheduledFor.Sub(fireAt(0)).Hours()))
	}
	return out
}

// fire returns the one fire of flow at at.
func fire(t *testing.T, s store.Store, flow string, at time.Time) store.Fire {
	t.Helper()
	fires, err := s.ListFires(t.Context(), flow, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fires {
		if f.ScheduledFor.Equal(at) {
			return f
		}
	}
	t.Fatalf("no fire of %q at %v among %+v", flow, at, fires)
	return store.Fire{}
}

// testClaimFire: each fire (flow, scheduled time) is claimed once, whoever asks again,
// and LastFire is the latest one claimed.
func testClaimFire(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := fireAt(0)
	if _, ok, err := s.LastFire(ctx, "p"); err != nil || ok {
		t.Errorf("LastFire before any fire: ok %v (%v), want none", ok, err)
	}
	tests := []struct {
		name     string
		flow     string
		at       time.Time
		instance string
		want     bool
	}{
		{name: "first claim wins", flow: "p", at: at, instance: "a", want: true},
		{name: "another instance loses", flow: "p", at: at, instance: "b", want: false},
		{name: "the same instance again loses", flow: "p", at: at, instance: "a", want: false},
		{name: "the same time in another zone is the same fire", flow: "p", at: at.In(time.FixedZone("X", 7200)), instance: "b", want: false},
		{name: "the next fire is free", flow: "p", at: at.Add(time.Hour), instance: "b", want: true},
		{name: "an earlier fire is free", flow: "p", at: at.Add(-time.Hour), instance: "b", want: true},
		{name: "another flow is free", flow: "q", at: at, instance: "b", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ClaimFire(ctx, tt.flow, tt.at, tt.instance, false)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ClaimFire won %v, want %v", got, tt.want)
			}
		})
	}
	if last, ok, err := s.LastFire(ctx, "p"); err != nil || !ok || !last.Equal(at.Add(time.Hour)) {
		t.Errorf("LastFire(p) = %v, %v, %v; want %v", last, ok, err, at.Add(time.Hour))
	}
	if last, ok, err := s.LastFire(ctx, "q"); err != nil || !ok || !last.Equal(at) {
		t.Errorf("LastFire(q) = %v, %v, %v; want %v", last, ok, err, at)
	}
	if _, ok, err := s.LastFire(ctx, "never"); err != nil || ok {
		t.Errorf("LastFire(never) = %v, %v; want none", ok, err)
	}
	f := fire(t, s, "p", at)
	if f.ClaimedBy != "a" || f.Status != store.FireClaimed || f.RunID != nil || f.Error != "" || f.Catchup {
		t.Errorf("claimed fire = %+v, want claimed by a, status claimed, no run", f)
	}
	near(t, "ClaimedAt", f.ClaimedAt, time.Now(), timeSlack)
}

// testMarkFire: MarkFire records what became of a fire, and links fire and run both
// ways: the run's ScheduledFor is set when it has none.
func testMarkFire(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := fireAt(0)
	if _, err := s.ClaimFire(ctx, "p", at, "a", true); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "p", Trigger: store.TriggerSchedule})
	mark := func(flow string, at time.Time, status string, runID int64, msg string) {
		t.Helper()
		if err := s.MarkFire(ctx, flow, at, status, runID, msg); err != nil {
			t.Fatal(err)
		}
	}
	mark("p", at, store.FireRunning, 0, "")
	if f := fire(t, s, "p", at); f.Status != store.FireRunning || f.RunID != nil {
		t.Errorf("fire marked running = %+v, want running, no run yet", f)
	}
	mark("p", at, store.FireRan, run.ID, "")
	f := fire(t, s, "p", at)
	if f.Status != store.FireRan || f.RunID == nil || *f.RunID != run.ID || !f.Catchup || f.ClaimedBy != "a" || f.Error != "" {
		t.Errorf("fire marked ran = %+v (run %v), want ran, run %d, catchup, claimed by a", f, f.RunID, run.ID)
	}
	rec, err := s.GetRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Trigger != store.TriggerSchedule {
		t.Errorf("run trigger %q, want schedule", rec.Trigger)
	}
	nearPtr(t, "GetRun ScheduledFor", rec.ScheduledFor, at, roundTrip)
	runs, err := s.ListRuns(ctx, store.RunFilter{Flow: "p"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("ListRuns: %+v (%v)", runs, err)
	}
	nearPtr(t, "ListRuns ScheduledFor", runs[0].ScheduledFor, at, roundTrip)

	// Marking without a run keeps the run linked.
	mark("p", at, store.FireRan, 0, "")
	if f := fire(t, s, "p", at); f.RunID == nil || *f.RunID != run.ID {
		t.Errorf("fire marked again without a run lost its run: %+v", f)
	}
	// A later fire linked to the same run does not change the run's scheduled time.
	if _, err := s.ClaimFire(ctx, "p", fireAt(1), "a", false); err != nil {
		t.Fatal(err)
	}
	mark("p", fireAt(1), store.FireRan, run.ID, "")
	if rec, err := s.GetRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	} else {
		nearPtr(t, "ScheduledFor after a second fire", rec.ScheduledFor, at, roundTrip)
	}
	if f := fire(t, s, "p", fireAt(1)); f.RunID == nil || *f.RunID != run.ID || f.Catchup {
		t.Errorf("second fire = %+v, want linked to run %d, not catchup", f, run.ID)
	}

	// A run started for a fire records its time at once.
	q := startRun(t, s, store.RunStart{Flow: "q", Trigger: store.TriggerSchedule, ScheduledFor: new(fireAt(2))})
	if rec, err := s.GetRun(ctx, q.ID); err != nil {
		t.Fatal(err)
	} else {
		nearPtr(t, "ScheduledFor of a run started with one", rec.ScheduledFor, fireAt(2), roundTrip)
	}

	// A fire that could not start records why.
	if _, err := s.ClaimFire(ctx, "q", fireAt(3), "b", false); err != nil {
		t.Fatal(err)
	}
	mark("q", fireAt(3), store.FireFailed, 0, "could not start: boom")
	if f := fire(t, s, "q", fireAt(3)); f.Status != store.FireFailed || f.Error != "could not start: boom" || f.RunID != nil {
		t.Errorf("failed fire = %+v, want failed with its error, no run", f)
	}
	mark("q", fireAt(3), store.FireCancelled, 0, "")
	if f := fire(t, s, "q", fireAt(3)); f.Status != store.FireCancelled || f.Error != "" {
		t.Errorf("fire marked again = %+v, want cancelled and its old error gone", f)
	}
}

// testListFires: ListFires lists fires latest first, of one flow or all, at most limit;
// PruneFires deletes fires before a cutoff but each flow's latest.
func testListFires(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, c := range []struct {
		flow  string
		hours int
	}{{"p", 1}, {"p", 2}, {"q", 1}, {"q", 3}} {
		if ok, err := s.ClaimFire(ctx, c.flow, fireAt(c.hours), "a", false); err != nil || !ok {
			t.Fatalf("claiming %s@%d: %v %v", c.flow, c.hours, ok, err)
		}
	}
	tests := []struct {
		name  string
		flow  string
		limit int
		want  []string
	}{
		{name: "all", flow: "", limit: 0, want: []string{"q@3", "p@2", "p@1", "q@1"}},
		{name: "no limit", flow: "", limit: -1, want: []string{"q@3", "p@2", "p@1", "q@1"}},
		{name: "limit", flow: "", limit: 2, want: []string{"q@3", "p@2"}},
		{name: "flow", flow: "p", limit: 0, want: []string{"p@2", "p@1"}},
		{name: "flow and limit", flow: "q", limit: 1, want: []string{"q@3"}},
		{name: "no such flow", flow: "nope", limit: 0, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listFires(t, s, tt.flow, tt.limit); !slices.Equal(got, tt.want) {
				t.Errorf("ListFires(%q, %d) = %v, want %v", tt.flow, tt.limit, got, tt.want)
			}
		})
	}

	prunes := []struct {
		name    string
		cutoff  time.Time
		deleted int64
		left    []string
	}{
		{name: "nothing before the first", cutoff: fireAt(1), deleted: 0, left: []string{"q@3", "p@2", "p@1", "q@1"}},
		{name: "each flow's latest is kept", cutoff: fireAt(2), deleted: 2, left: []string{"q@3", "p@2"}},
		{name: "even when it is older than the cutoff", cutoff: fireAt(100), deleted: 0, left: []string{"q@3", "p@2"}},
	}
	for _, tt := range prunes {
		t.Run("prune: "+tt.name, func(t *testing.T) {
			n, err := s.PruneFires(ctx, tt.cutoff)
			if err != nil || n != tt.deleted {
				t.Errorf("PruneFires = %d (%v), want %d", n, err, tt.deleted)
			}
			if got := listFires(t, s, "", 0); !slices.Equal(got, tt.left) {
				t.Errorf("left %v, want %v", got, tt.left)
			}
		})
	}
	if last, ok, err := s.LastFire(ctx, "p"); err != nil || !ok || !last.Equal(fireAt(2)) {
		t.Errorf("LastFire(p) after pruning = %v, %v, %v; want %v", last, ok, err, fireAt(2))
	}
}

// testFlowRunning: a flow is running while a run of it is recorded as running and held
// by a live Run; a run whose holder is gone (a crash) or that finished is not going.
func testFlowRunning(t *testing.T, s store.Store) {
	ctx := t.Context()
	running := func(flow string) bool {
		t.Helper()
		ok, err := s.FlowRunning(ctx, flow)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if running("p") {
		t.Error("a flow never run is running")
	}
	run := startRun(t, s, store.RunStart{Flow: "p"})
	if !running("p") {
		t.Error("a flow whose run is held is not running")
	}
	if running("q") {
		t.Error("another flow is running")
	}
	run.Close()
	if running("p") {
		t.Error("a flow whose run was released without finishing (a crash) is running")
	}
	h, err := s.HoldRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !running("p") {
		t.Error("a flow whose running run is held again is not running")
	}
	h.Close()
	if running("p") {
		t.Error("a flow is running after its run's hold is released")
	}
	done := startRun(t, s, store.RunStart{Flow: "q"})
	if _, err := s.FinishRun(ctx, done.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	if running("q") {
		t.Error("a flow whose run finished is running, though the run is still held")
	}
	done.Close()
	if running("q") {
		t.Error("a flow whose run finished is running")
	}
}

// testTryLockFlow: a flow's lock is exclusive or shared: shared holders coexist, an
// exclusive one excludes everyone, and a release frees it at once.
func testTryLockFlow(t *testing.T, s store.Store) {
	ctx := t.Context()
	try := func(flow string, shared, want bool) store.FlowLock {
		t.Helper()
		l, ok, err := s.TryLockFlow(ctx, flow, shared)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Errorf("TryLockFlow(%q, shared %v) = %v, want %v", flow, shared, ok, want)
		}
		if ok && l == nil {
			t.Fatalf("TryLockFlow(%q, shared %v) is ok without a lock", flow, shared)
		}
		if !ok && l != nil {
			t.Errorf("TryLockFlow(%q, shared %v) refused but returned a lock", flow, shared)
		}
		return l
	}
	// Release must be called once: every lock taken here is released below.
	excl := try("p", false, true)
	try("p", false, false)
	try("p", true, false)
	q := try("q", false, true) // another flow's lock is another lock
	q.Release()
	excl.Release()

	s1 := try("p", true, true)
	s2 := try("p", true, true)
	try("p", false, false)
	s1.Release()
	try("p", false, false) // s2 still holds it
	s2.Release()
	excl = try("p", false, true)
	excl.Release()
	try("p", true, true).Release()
}
