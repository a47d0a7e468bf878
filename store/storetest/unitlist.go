package storetest

import (
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// testListUnits: a run's units as the UI's map reads them, with their bbox, state,
// counts, requests and dead letter, filtered by task, state and area, and capped.
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
	done := store.Counts{Inserted: 7, Skipped: 2, Updated: 1, Bytes: 4096, Rejected: 0, Merged: 1, Requests: 3}
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(0)}, done)
	// A unit started shows as running; a done one started again (a late call) stays done.
	for _, k := range []int{0, 3} {
		if err := s.StartUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(k)}); err != nil {
			t.Fatal(err)
		}
	}
	dead := store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(2)}
	entry, err := s.RecordDeadLetter(ctx, dead, dlq.Entry{Flow: "parcels", BBox: unitBBox(2), Class: dlq.ClassHTTP5xx,
		Error: "HTTP 500", Attempts: 4, Request: dlq.Request{Method: "GET", URL: "https://WFS.example:8443/wfs?x=1"}})
	if err != nil {
		t.Fatal(err)
	}

	all, total, err := s.ListUnits(ctx, store.UnitFilter{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(us []store.UnitRecord) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.Task+"/"+u.Key)
		}
		return out
	}
	if want := []string{"tiles/t0", "wfs/u000", "wfs/u001", "wfs/u002", "wfs/u003"}; total != 5 || !slices.Equal(keys(all), want) {
		t.Fatalf("ListUnits = %v (total %d), want %v (5)", keys(all), total, want)
	}
	if all[0].BBox != nil {
		t.Errorf("a unit without a bbox has %v", all[0].BBox)
	}
	u0 := all[1]
	if u0.State != store.Done || u0.FeaturesInserted != 7 || u0.FeaturesSkipped != 2 || u0.FeaturesUpdated != 1 ||
		u0.FeaturesMerged != 1 || u0.Bytes != 4096 || u0.Requests != 3 || u0.Attempts != 1 || u0.DeadLetter != 0 ||
		u0.StartedAt == nil || u0.FinishedAt == nil || u0.BBox == nil || !u0.BBox.Equal(*unitBBox(0)) {
		t.Errorf("done unit: %+v", u0)
	}
	if u2 := all[3]; u2.State != store.Failed || u2.DeadLetter != entry {
		t.Errorf("dead unit: %+v, want failed with dead letter %d", u2, entry)
	}
	if u3 := all[4]; u3.State != store.Running || u3.StartedAt == nil {
		t.Errorf("started unit: %+v, want running with its start", u3)
	}
	if u1 := all[2]; u1.State != store.Pending || u1.Requests != 0 || u1.FinishedAt != nil {
		t.Errorf("pending unit: %+v", u1)
	}

	tests := []struct {
		name  string
		f     store.UnitFilter
		want  []string
		total int64
	}{
		{"task", store.UnitFilter{Task: "tiles"}, []string{"tiles/t0"}, 1},
		{"state", store.UnitFilter{State: store.Failed}, []string{"wfs/u002"}, 1},
		{"area", store.UnitFilter{BBox: &orb.Bound{Min: orb.Point{1.5, 0.2}, Max: orb.Point{2.5, 0.8}}}, []string{"wfs/u001", "wfs/u002"}, 2},
		{"limit", store.UnitFilter{Limit: 2}, []string{"tiles/t0", "wfs/u000"}, 5},
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
			if !slices.Equal(keys(got), tt.want) || total != tt.total {
				t.Errorf("ListUnits(%+v) = %v (total %d), want %v (%d)", tt.f, keys(got), total, tt.want, tt.total)
			}
		})
	}

	// The dead letters by host, as dlq stats names it (lower-cased), or none.
	if _, err := s.RecordDeadLetter(ctx, store.UnitRef{RunID: run.ID, TaskID: "wfs", Key: unitKey(3)},
		dlq.Entry{Flow: "parcels", Class: dlq.ClassDatabase, Error: "the store is down"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host string
		want []int64
	}{
		{"wfs.example:8443", []int64{entry}},
		{dlq.NoHost, []int64{entry + 1}},
		{"other.example", nil},
	} {
		es, err := s.ListDeadLetters(ctx, dlq.Filter{Host: tt.host})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.DeadLetterStats(ctx, dlq.Filter{Host: tt.host})
		if err != nil {
			t.Fatal(err)
		}
		if got := entryIDs(es); !slices.Equal(got, tt.want) || dlq.Aggregate(rows).Total != int64(len(tt.want)) {
			t.Errorf("host %q: entries %v, stats %+v; want %v", tt.host, got, rows, tt.want)
		}
	}
}
