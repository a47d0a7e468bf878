package storetest

import (
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// testOverlap: of the features a unit skips, those whose stored row this same run wrote
// are overlaps (Counts.Overlap: a feature on the edge of two tiles, returned by both),
// the others were already present, stored by an earlier run. In every write mode, a
// first run's overlaps are counted and nothing is already present; a second run of the
// same features finds them all already present, none of them an overlap, though two
// tiles still return the edge feature (its stored row is the first run's). A feature a
// run changes is its own from then on. The run's summary and its record sum the units'.
func testOverlap(t *testing.T, s store.Store) {
	ctx := t.Context()
	keyed := func(name string, mode store.Mode, history bool) *store.FeatureTable {
		return &store.FeatureTable{Name: name, SRID: 4326, Mode: mode, History: history, Key: keyOf(mode),
			Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeText}, {Name: "v", Property: "v", Type: store.TypeText}}}
	}
	f := func(code string, x float64, v string) *spatial.Feature {
		return &spatial.Feature{ID: "f." + code, Geometry: orb.Point{x, 1}, Properties: map[string]any{"code": code, "v": v}}
	}
	for _, table := range []*store.FeatureTable{keyed("ov_append", store.ModeAppend, false), keyed("ov_upsert", store.ModeUpsert, false),
		keyed("ov_mirror", store.ModeMirror, false), keyed("ov_history", store.ModeAppend, true)} {
		t.Run(table.Name, func(t *testing.T) {
			if err := s.EnsureFeatureTable(ctx, table); err != nil {
				t.Fatal(err)
			}
			// Two tiles share the edge feature e; the second page holds d twice.
			left := []*spatial.Feature{f("a", 1, "1"), f("e", 2, "1")}
			right := []*spatial.Feature{f("e", 2, "1"), f("d", 3, "1"), f("d", 3, "1")}
			first := overlapRun(t, s, table, left, right)
			if want := []store.Counts{{Inserted: 2}, {Inserted: 1, Skipped: 2, Overlap: 2}}; !equalCounts(first.counts, want) {
				t.Errorf("first run wrote %+v, want %+v", first.counts, want)
			}
			if first.sum.Skipped != 2 || first.sum.Overlap != 2 || first.rec.FeaturesOverlap != 2 {
				t.Errorf("first run: summary %d skipped, %d overlaps; record %d overlaps; want 2, 2, 2", first.sum.Skipped, first.sum.Overlap, first.rec.FeaturesOverlap)
			}
			if len(first.rec.Tasks) != 1 || first.rec.Tasks[0].FeaturesOverlap != 2 || first.rec.Tasks[0].FeaturesSkipped != 2 {
				t.Errorf("first run's task record: %+v; want 2 skipped, 2 of them overlaps", first.rec.Tasks)
			}
			if got := unitOverlaps(t, s, first.rec.ID); !slices.Equal(got, []int64{0, 2}) {
				t.Errorf("first run's units record overlaps %v, want [0 2]", got)
			}
			second := overlapRun(t, s, table, left, right)
			if want := []store.Counts{{Skipped: 2}, {Skipped: 3}}; !equalCounts(second.counts, want) {
				t.Errorf("rerun wrote %+v, want %+v: everything already present", second.counts, want)
			}
			if second.sum.Overlap != 0 || second.rec.FeaturesOverlap != 0 {
				t.Errorf("rerun: summary %d overlaps, record %d; want 0", second.sum.Overlap, second.rec.FeaturesOverlap)
			}
			if table.Mode == store.ModeAppend && !table.History {
				return // an edited feature is another payload: a new row, not the edited one
			}
			// e edited upstream: the first tile writes it, the second finds the run's own row.
			edited := []*spatial.Feature{f("a", 1, "1"), f("e", 2, "2")}
			third := overlapRun(t, s, table, edited, []*spatial.Feature{f("e", 2, "2"), f("d", 3, "1")})
			if want := []store.Counts{{Updated: 1, Skipped: 1}, {Skipped: 2, Overlap: 1}}; !equalCounts(third.counts, want) {
				t.Errorf("run with an edit wrote %+v, want %+v", third.counts, want)
			}
		})
	}
}

// keyOf is the key of the overlap tables: the code column for upsert, the feature id for
// the others.
func keyOf(mode store.Mode) []string {
	if mode == store.ModeUpsert {
		return []string{"code"}
	}
	return nil
}

// equalCounts compares the feature counts of two lists of unit counts.
func equalCounts(got, want []store.Counts) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Inserted != w.Inserted || g.Skipped != w.Skipped || g.Updated != w.Updated || g.Overlap != w.Overlap {
			return false
		}
	}
	return true
}

// overlapped is what a run of overlapRun wrote and recorded.
type overlapped struct {
	counts []store.Counts
	sum    store.RunSummary
	rec    store.RunRecord
}

// overlapRun runs a flow whose units each write one page into table, finishes it done
// and reads back its summary and record.
func overlapRun(t *testing.T, s store.Store, table *store.FeatureTable, pages ...[]*spatial.Feature) overlapped {
	t.Helper()
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "ov_" + table.Name})
	addUnits(t, s, run.ID, "a", len(pages))
	var o overlapped
	for i, p := range pages {
		o.counts = append(o.counts, writeFeatures(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)}, table, p...))
	}
	if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Done, ""); err != nil {
		t.Fatal(err)
	}
	var err error
	if o.sum, err = s.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run.Close()
	if o.rec, err = s.GetRun(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	return o
}

// unitOverlaps are the overlap counts ListUnits reads back for a run's units, in key order.
func unitOverlaps(t *testing.T, s store.Store, runID int64) []int64 {
	t.Helper()
	units, _, err := s.ListUnits(t.Context(), store.UnitFilter{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, u := range units {
		out = append(out, u.FeaturesOverlap)
	}
	return out
}
