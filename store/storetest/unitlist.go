package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// unitNames names units task/key, for comparing lists.
func unitNames(us []store.UnitRecord) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Task+"/"+u.Key)
	}
	return out
}

// testListUnits: a run's units as the UI's map reads them, with their bbox, parent,
// state, counts, requests, error and dead letter, filtered by task, state and area, and
// capped with the total still counted.
func testListUnits(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 4)
	if err := s.SetTaskState(ctx, run.ID, "tiles", "fake", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUnits(ctx, run.ID, "tiles", []store.Unit{{Key: "t0"}}); err != nil { // no bbox
		t.Fatal(err)
	}

	// u000 is done twice (a replay): its counts, requests among them, are its last
	// execution's, its attempts add up, and the second planned a child.
	u0 := store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(0)}
	completeUnit(t, s, u0, store.Counts{Inserted: 1, Bytes: 10, Requests: 9})
	done := store.Counts{Inserted: 7, Skipped: 2, Updated: 1, Bytes: 4096, Rejected: 0, Merged: 1, Requests: 3}
	child := store.Unit{Key: "u000.0", BBox: &orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{0.5, 0.5}}}
	tx, err := s.BeginUnit(ctx, u0)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Complete(ctx, done, []store.Unit{child}, nil, time.Now()); err != nil {
		tx.Rollback(ctx)
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A unit started shows as running; a done one started again (a late call) stays done.
	for _, k := range []int{0, 3} {
		if err := s.StartUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(k)}); err != nil {
			t.Fatal(err)
		}
	}
	dead := store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(2)}
	entry, err := s.RecordDeadLetter(ctx, dead, dlq.Entry{Flow: "parcels", BBox: unitBBox(2), Class: dlq.ClassHTTP5xx,
		Error: "HTTP 500", Attempts: 4, Request: dlq.Request{Method: "GET", URL: "https://wfs.example:8443/wfs?x=1"}})
	if err != nil {
		t.Fatal(err)
	}

	all, total, err := s.ListUnits(ctx, store.UnitFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tiles/t0", "wfs/u000", "wfs/u000.0", "wfs/u001", "wfs/u002", "wfs/u003"}; total != 6 || !slices.Equal(unitNames(all), want) {
		t.Fatalf("ListUnits = %v (total %d), want %v (6)", unitNames(all), total, want)
	}
	if t0 := all[0]; t0.BBox != nil || t0.State != store.Pending {
		t.Errorf("a pending unit without a bbox: %+v", t0)
	}
	if u := all[1]; u.State != store.Done || u.FeaturesInserted != 7 || u.FeaturesSkipped != 2 || u.FeaturesUpdated != 1 ||
		u.FeaturesRejected != 0 || u.FeaturesMerged != 1 || u.Bytes != 4096 || u.Requests != 3 || u.Attempts != 2 ||
		u.DeadLetter != 0 || u.Error != "" || u.Parent != "" || u.StartedAt == nil || u.FinishedAt == nil ||
		u.BBox == nil || !u.BBox.Equal(*unitBBox(0)) {
		t.Errorf("done unit: %+v, want the counts and 3 requests of its last execution, 2 attempts", u)
	}
	if u := all[2]; u.Parent != unitKey(0) || u.State != store.Pending || !sameBound(u.BBox, child.BBox) {
		t.Errorf("planned unit: %+v, want pending with parent %s and bbox %v", u, unitKey(0), *child.BBox)
	}
	if u := all[3]; u.State != store.Pending || u.Requests != 0 || u.Attempts != 0 || u.StartedAt != nil || u.FinishedAt != nil {
		t.Errorf("pending unit: %+v", u)
	}
	if u := all[4]; u.State != store.Failed || u.DeadLetter != entry || u.Error != "HTTP 500" || u.Attempts == 0 ||
		u.FinishedAt == nil || !sameBound(u.BBox, unitBBox(2)) {
		t.Errorf("dead unit: %+v, want failed with its error and dead letter %d", u, entry)
	}
	if u := all[5]; u.State != store.Running || u.StartedAt == nil || u.DeadLetter != 0 {
		t.Errorf("started unit: %+v, want running with its start", u)
	}

	tests := []struct {
		name  string
		f     store.UnitFilter
		want  []string
		total int64
	}{
		{"task", store.UnitFilter{Task: "tiles"}, []string{"tiles/t0"}, 1},
		{"task and state", store.UnitFilter{Task: "wfs", State: store.Pending}, []string{"wfs/u000.0", "wfs/u001"}, 2},
		{"state", store.UnitFilter{State: store.Failed}, []string{"wfs/u002"}, 1},
		{"area", store.UnitFilter{BBox: &orb.Bound{Min: orb.Point{1.5, 0.2}, Max: orb.Point{2.5, 0.8}}}, []string{"wfs/u001", "wfs/u002"}, 2},
		{"area touching an edge", store.UnitFilter{BBox: &orb.Bound{Min: orb.Point{4, 0.5}, Max: orb.Point{5, 2}}}, []string{"wfs/u003"}, 1},
		{"area of a child", store.UnitFilter{BBox: &orb.Bound{Min: orb.Point{0.1, 0.1}, Max: orb.Point{0.2, 0.2}}}, []string{"wfs/u000", "wfs/u000.0"}, 2},
		{"area of everything skips units without one", store.UnitFilter{BBox: &orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}},
			[]string{"wfs/u000", "wfs/u000.0", "wfs/u001", "wfs/u002", "wfs/u003"}, 5},
		{"area misses", store.UnitFilter{BBox: &orb.Bound{Min: orb.Point{10, 10}, Max: orb.Point{11, 11}}}, nil, 0},
		{"limit", store.UnitFilter{Limit: 2}, []string{"tiles/t0", "wfs/u000"}, 6},
		{"limit after the filter", store.UnitFilter{Task: "wfs", Limit: 1}, []string{"wfs/u000"}, 5},
		{"no limit", store.UnitFilter{Limit: -1}, []string{"tiles/t0", "wfs/u000", "wfs/u000.0", "wfs/u001", "wfs/u002", "wfs/u003"}, 6},
		{"other run", store.UnitFilter{RunID: run.ID + 1}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			if f.RunID == 0 {
				f.RunID = run.ID
			}
			got, total, err := s.ListUnits(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(unitNames(got), tt.want) || total != tt.total {
				t.Errorf("ListUnits(%+v) = %v (total %d), want %v (%d)", tt.f, unitNames(got), total, tt.want, tt.total)
			}
		})
	}
}

// testListUnitsDefaultLimit: the zero Limit lists the first 10000 units and counts them
// all; a negative one lists them all.
func testListUnitsDefaultLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "tiles"})
	if err := s.SetTaskState(ctx, run.ID, "t", "fake", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	units := make([]store.Unit, 10001)
	for i := range units {
		units[i] = store.Unit{Key: unitKey(i)} // u000 .. u10000: u10000 sorts after u1000
	}
	if err := s.AddUnits(ctx, run.ID, "t", units); err != nil {
		t.Fatal(err)
	}
	got, total, err := s.ListUnits(ctx, store.UnitFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10000 || total != 10001 {
		t.Errorf("ListUnits with the zero limit: %d units of %d, want 10000 of 10001", len(got), total)
	}
	if got, total, err := s.ListUnits(ctx, store.UnitFilter{RunID: run.ID, Limit: -1}); err != nil || len(got) != 10001 || total != 10001 {
		t.Errorf("ListUnits without a limit: %d units of %d (%v), want 10001", len(got), total, err)
	}
}
