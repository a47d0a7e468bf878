package storetest

import (
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// testSourceHash: a feature a transform reshaped (its geometry made multi) is keyed on
// the payload hash of the feature as received (spatial.Feature.Hash): writing it and then
// the feature as received stores one row, with that hash. The features a unit's
// transform left out (Counts.Filtered) are summed by FilteredFeatures and in the run's
// summary.
func testSourceHash(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := typedTable("reshaped", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "reshaped"})
	addUnits(t, s, run.ID, "a", 2)
	poly := orb.Polygon{{{1, 1}, {2, 1}, {2, 2}, {1, 1}}}
	received := &spatial.Feature{ID: "r.1", Geometry: poly, Properties: map[string]any{"Name": "one"}}
	hash := spatial.PayloadHash(received)
	reshaped := &spatial.Feature{ID: "r.1", Geometry: orb.MultiPolygon{poly}, Properties: map[string]any{"Name": "one"}, Hash: &hash}
	if got := writeFeatures(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}, table, reshaped); got.Inserted != 1 {
		t.Fatalf("writing the reshaped feature: %+v, want 1 inserted", got)
	}
	if got := writeFeatures(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(1)}, table, received); got.Skipped != 1 {
		t.Errorf("writing the feature as received after its reshaped self: %+v, want it skipped (one payload hash)", got)
	}
	st := storedTable(t, tablesOf(t, s), table.Name)
	all := readAll(t, tablesOf(t, s), st, store.FeatureQuery{})
	if len(all) != 1 || all[0].TileID != store.TileID(hash[:]) {
		t.Fatalf("stored %d rows, want one keyed on the source's hash", len(all))
	}
	if _, ok := all[0].Geometry.(orb.MultiPolygon); !ok {
		t.Errorf("stored geometry %T, want the reshaped orb.MultiPolygon", all[0].Geometry)
	}

	filtered := startRun(t, s, store.RunStart{Flow: "filtered"})
	addUnits(t, s, filtered.ID, "a", 2)
	for i, n := range []int64{3, 4} {
		completeUnit(t, s, store.UnitRef{RunID: filtered.ID, TaskID: "a", Key: unitKey(i)}, store.Counts{Filtered: n})
	}
	if n, err := s.FilteredFeatures(ctx, filtered.ID, "a"); err != nil || n != 7 {
		t.Errorf("FilteredFeatures = %d (%v), want 7", n, err)
	}
	sum, err := s.FinishRun(ctx, filtered.ID, store.Done, "")
	if err != nil || sum.Filtered != 7 {
		t.Errorf("FinishRun's summary: Filtered %d (%v), want 7", sum.Filtered, err)
	}
}
