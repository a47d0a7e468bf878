package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// parcel is a feature of the mirror tests: id, a point and a name.
func parcel(id string, x, y float64, name string) *spatial.Feature {
	return &spatial.Feature{ID: id, Geometry: orb.Point{x, y}, Properties: map[string]any{"name": name}}
}

func mirrorTable(name string, history bool) *store.FeatureTable {
	return &store.FeatureTable{Name: name, SRID: 4326, Mode: store.ModeMirror, History: history,
		Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
}

// changes lists a run's changes as "kind key" strings, in the store's order.
func changes(t *testing.T, s store.Store, f store.ChangeFilter) ([]string, []store.Change) {
	t.Helper()
	var out []string
	var all []store.Change
	err := s.ListChanges(t.Context(), f, func(c store.Change) error {
		out = append(out, c.Kind+" "+c.Key)
		all = append(all, c)
		return nil
	})
	if err != nil {
		t.Fatalf("ListChanges(%+v): %v", f, err)
	}
	return out, all
}

// mirrorRun is one run of flow "m" writing pages into table as task "a", one unit each.
func mirrorRun(t *testing.T, s store.Store, table *store.FeatureTable, pages ...[]*spatial.Feature) (*store.Run, []store.Counts) {
	t.Helper()
	run := startRun(t, s, store.RunStart{Flow: "m"})
	addUnits(t, s, run.ID, "a", len(pages))
	var counts []store.Counts
	for i, p := range pages {
		counts = append(counts, writeFeatures(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(i)}, table, p...))
	}
	return run, counts
}

// unseen lists what run did not see in area, as keys, and the rail's base.
func unseen(t *testing.T, s store.Store, table *store.FeatureTable, runID int64, area orb.Bound, partial bool) ([]string, int64) {
	t.Helper()
	u, err := s.UnseenFeatures(t.Context(), table, store.UnseenQuery{RunID: runID, Task: "a", Area: area, Partial: partial})
	if err != nil {
		t.Fatalf("UnseenFeatures(run %d, %v): %v", runID, area, err)
	}
	keys := []string{}
	for _, f := range u.Features {
		keys = append(keys, f.Key)
		if f.FeatureID != f.Key {
			t.Errorf("unseen %+v: want the feature id the key (a mirror keyed on the id)", f)
		}
	}
	slices.Sort(keys) // the stores' collations differ
	return keys, u.Current
}

// deleteUnseen deletes what run did not see in area, as a finish that found every
// candidate gone would, and forgets the seen keys of earlier runs; it returns how many it
// deleted, the candidates and the rail's base.
func deleteUnseen(t *testing.T, s store.Store, table *store.FeatureTable, runID int64, area orb.Bound, partial bool) (deleted int64, keys []string, current int64) {
	t.Helper()
	keys, current = unseen(t, s, table, runID, area, partial)
	deleted, err := s.DeleteFeatures(t.Context(), table, store.DeleteKeys{RunID: runID, Task: "a", Keys: keys})
	if err != nil {
		t.Fatalf("DeleteFeatures(run %d, %q): %v", runID, keys, err)
	}
	if err := s.ForgetSeen(t.Context(), "m", "a", runID); err != nil {
		t.Fatal(err)
	}
	return deleted, keys, current
}

// testMirror: a mirror table keyed on the feature id: unchanged features are skipped, a
// changed one updated, each change logged; the features a run did not see are deleted
// only past the safety rail when allowed, each logged with what it held.
func testMirror(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := mirrorTable("mirror", false)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	a, b, c, d := parcel("p.a", 1, 1, "a"), parcel("p.b", 2, 2, "b"), parcel("p.c", 3, 3, "c"), parcel("p.d", 4, 4, "d")
	run1, counts := mirrorRun(t, s, table, []*spatial.Feature{a, b, c}, []*spatial.Feature{c, d})
	if want := []store.Counts{{Inserted: 3}, {Inserted: 1, Skipped: 1, Overlap: 1}}; !slices.Equal(counts, want) {
		t.Errorf("run 1 wrote %+v, want %+v (c, on two tiles, once)", counts, want)
	}
	if n, err := s.SeenFeatures(ctx, table, run1.ID, "a"); err != nil || n != 4 {
		t.Errorf("SeenFeatures = %d (%v), want 4", n, err)
	}
	got, _ := changes(t, s, store.ChangeFilter{RunID: run1.ID})
	if want := []string{"inserted p.a", "inserted p.b", "inserted p.c", "inserted p.d"}; !slices.Equal(got, want) {
		t.Errorf("run 1 changes %q, want %q", got, want)
	}
	if n, keys, cur := deleteUnseen(t, s, table, run1.ID, world, false); n != 0 || len(keys) != 0 || cur != 4 {
		t.Errorf("after run 1: %d deleted of candidates %q, %d current; want nothing to delete of 4", n, keys, cur)
	}
	if _, err := s.FinishRun(ctx, run1.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run1.Close()

	// Upstream: b edited, c deleted, e added.
	b2, e := parcel("p.b", 2, 2.5, "b, edited"), parcel("p.e", 5, 5, "e")
	run2, counts := mirrorRun(t, s, table, []*spatial.Feature{a, b2}, []*spatial.Feature{d, e})
	if want := []store.Counts{{Skipped: 1, Updated: 1}, {Skipped: 1, Inserted: 1}}; !slices.Equal(counts, want) {
		t.Errorf("run 2 wrote %+v, want %+v", counts, want)
	}
	// Listing the candidates changes nothing.
	for range 2 {
		if keys, cur := unseen(t, s, table, run2.ID, world, false); !slices.Equal(keys, []string{"p.c"}) || cur != 5 {
			t.Fatalf("UnseenFeatures of run 2 = %q of %d, want p.c of 5", keys, cur)
		}
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 5 {
		t.Errorf("after listing the candidates, CountFeatures = %d (%v), want 5", n, err)
	}
	// A key that is no current row, or one a later run wrote, is left alone.
	if n, err := s.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run1.ID, Task: "a", Keys: []string{"p.e", "p.none"}}); err != nil || n != 0 {
		t.Errorf("DeleteFeatures of run 1 of p.e (written by run 2) and an unknown key = %d (%v), want 0", n, err)
	}
	if n, err := s.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run2.ID, Task: "a", Keys: []string{"p.c"}}); err != nil || n != 1 {
		t.Fatalf("DeleteFeatures(p.c) = %d (%v), want c deleted", n, err)
	}
	if err := s.ForgetSeen(ctx, "m", "a", run2.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 4 {
		t.Errorf("after the deletion, CountFeatures = %d (%v), want 4", n, err)
	}
	if n, err := s.SeenFeatures(ctx, table, run2.ID, "a"); err != nil || n != 4 {
		t.Errorf("after the deletion, SeenFeatures = %d (%v), want 4: kept until a later run supersedes the run (a finish retried must see them)", n, err)
	}
	if n, err := s.SeenFeatures(ctx, table, run1.ID, "a"); err != nil || n != 0 {
		t.Errorf("run 1's SeenFeatures = %d (%v), want 0: run 2 superseded it", n, err)
	}
	if err := s.ForgetSeen(ctx, "m", "a", run2.ID+1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SeenFeatures(ctx, table, run2.ID, "a"); err != nil || n != 0 {
		t.Errorf("after ForgetSeen, SeenFeatures = %d (%v), want 0", n, err)
	}
	got, _ = changes(t, s, store.ChangeFilter{RunID: run2.ID})
	if want := []string{"inserted p.e", "updated p.b", "deleted p.c"}; !slices.Equal(got, want) {
		t.Errorf("run 2 changes %q, want %q", got, want)
	}
	_, all := changes(t, s, store.ChangeFilter{RunID: run2.ID, Task: "a", Features: true})
	for _, ch := range all {
		want := map[string]*spatial.Feature{"p.e": e, "p.b": b2, "p.c": c}[ch.Key]
		if ch.Superseded || ch.Geometry == nil || !orb.Equal(ch.Geometry, want.Geometry) || ch.Properties["name"] != want.Properties["name"] {
			t.Errorf("%s %s: geometry %v, properties %v, superseded %v; want %v and name %q", ch.Kind, ch.Key,
				ch.Geometry, ch.Properties, ch.Superseded, want.Geometry, want.Properties["name"])
		}
		if ch.FeatureID != ch.Key || ch.Table != "public.mirror" || ch.Task != "a" || ch.RunID != run2.ID {
			t.Errorf("change %+v: want feature id = key, table public.mirror, task a, run %d", ch, run2.ID)
		}
	}
	if got, _ := changes(t, s, store.ChangeFilter{RunID: run2.ID, Task: "other"}); len(got) != 0 {
		t.Errorf("changes of another task: %q, want none", got)
	}
	if err := s.NoteChanges(ctx, run2.ID, "a", store.TaskChanges{Seen: 4, Note: "complete: 1 deleted"}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.GetRun(ctx, run2.ID)
	if err != nil || len(rec.Tasks) != 1 {
		t.Fatalf("GetRun = %+v (%v)", rec, err)
	}
	if tk := rec.Tasks[0]; tk.FeaturesDeleted != 1 || tk.MirrorNote != "complete: 1 deleted" || tk.FeaturesUpdated != 1 || tk.VersionsClosed != 0 ||
		tk.FeaturesUnchanged == nil || *tk.FeaturesUnchanged != 2 {
		t.Errorf("task record %+v: want 1 deleted, 1 updated, 2 unchanged (a and d, d delivered twice), 0 closed (no history) and the note", tk)
	}
	if rec.FeaturesDeleted != 1 {
		t.Errorf("run record FeaturesDeleted = %d, want 1", rec.FeaturesDeleted)
	}

	// A later run edits b again: run 2's version of b is gone (no history).
	run2.Close()
	b3 := parcel("p.b", 2, 2, "b, edited twice")
	mirrorRun(t, s, table, []*spatial.Feature{a, b3, d, e})
	_, all = changes(t, s, store.ChangeFilter{RunID: run2.ID, Features: true})
	for _, ch := range all {
		if ch.Key == "p.b" && (!ch.Superseded || ch.Geometry != nil) {
			t.Errorf("run 2's b after a later edit: superseded %v, geometry %v; want superseded, no geometry", ch.Superseded, ch.Geometry)
		}
	}
}

// testMirrorArea: a --bbox run deletes only unseen features inside its area; a run that
// a later run of the task superseded deletes nothing.
func testMirrorArea(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := mirrorTable("mirror_area", false)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	// Besides p.1 inside the area and p.2 outside: a line whose box covers the area but
	// which passes around it, and a point a hair beyond its edge. Neither is inside the
	// area a --bbox run asked for, so neither may be deleted on its evidence.
	around := &spatial.Feature{ID: "p.L", Geometry: orb.LineString{{3, -1}, {3, 3}, {-1, 3}}, Properties: map[string]any{"name": "L"}}
	run1, _ := mirrorRun(t, s, table, []*spatial.Feature{parcel("p.1", 1, 1, ""), parcel("p.2", 5, 5, ""), parcel("p.3", 1.5, 1.5, ""),
		around, parcel("p.edge", 2.0000002, 1, "")})
	if _, err := s.FinishRun(ctx, run1.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run1.Close()
	run2, _ := mirrorRun(t, s, table, []*spatial.Feature{parcel("p.3", 1.5, 1.5, "")})
	area := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{2, 2}}
	n, keys, cur := deleteUnseen(t, s, table, run2.ID, area, true)
	// The rail's base: the boxes overlapping the area, p.edge's too where the store's
	// boxes are single precision (PostGIS rounds them outward).
	if n != 1 || !slices.Equal(keys, []string{"p.1"}) || cur < 3 || cur > 4 {
		t.Fatalf("in %v: %d deleted of %q, %d current; want p.1 deleted, of the 3 features whose box overlaps the area; p.2, p.L and p.edge (not inside) kept", area, n, keys, cur)
	}
	got, _ := changes(t, s, store.ChangeFilter{RunID: run2.ID})
	if want := []string{"deleted p.1"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if _, err := s.FinishRun(ctx, run2.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run2.Close()

	run3, _ := mirrorRun(t, s, table, []*spatial.Feature{parcel("p.3", 1.5, 1.5, "")})
	if err := s.SetTaskState(ctx, run3.ID, "a", "fake", store.Failed, "1 unit failed"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRun(ctx, run3.ID, store.Failed, ""); err != nil {
		t.Fatal(err)
	}
	run3.Close()
	run4, _ := mirrorRun(t, s, table, []*spatial.Feature{parcel("p.2", 5, 5, ""), parcel("p.3", 1.5, 1.5, "")})
	_ = run4
	if later, err := s.LaterRun(ctx, "m", "a", run3.ID); err != nil || later != run4.ID {
		t.Fatalf("LaterRun(run 3) = %d (%v), want run 4 (%d)", later, err, run4.ID)
	}
	if later, err := s.LaterRun(ctx, "m", "a", run4.ID); err != nil || later != 0 {
		t.Fatalf("LaterRun(run 4) = %d (%v), want 0", later, err)
	}
	// Listing run 3's candidates still works (the decision not to act on them is the
	// caller's): p.3 is the only one it saw.
	if keys, _ := unseen(t, s, table, run3.ID, world, false); !slices.Equal(keys, []string{"p.2", "p.L", "p.edge"}) {
		t.Errorf("UnseenFeatures of run 3 = %q, want p.2, p.L and p.edge", keys)
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 4 {
		t.Errorf("CountFeatures = %d (%v), want 4: p.2, p.3, p.L, p.edge", n, err)
	}
}

// testHistory: with history, a changed feature's version is closed and a new one opened,
// a deletion closes it; the current features count once; in append mode too (keyed on
// the id).
func testHistory(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := mirrorTable("parcels_history", true)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	a, b := parcel("p.a", 1, 1, "a"), parcel("p.b", 2, 2, "b")
	run1, counts := mirrorRun(t, s, table, []*spatial.Feature{a, b})
	if want := []store.Counts{{Inserted: 2}}; !slices.Equal(counts, want) {
		t.Errorf("run 1 wrote %+v, want %+v", counts, want)
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRun(ctx, run1.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run1.Close()
	a2, c := parcel("p.a", 1, 1.5, "a, edited"), parcel("p.c", 3, 3, "c")
	run2, counts := mirrorRun(t, s, table, []*spatial.Feature{a2, b, c, a2})
	if want := []store.Counts{{Inserted: 1, Updated: 1, Skipped: 2, Overlap: 1}}; !slices.Equal(counts, want) {
		t.Errorf("run 2 wrote %+v, want %+v", counts, want)
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 3 {
		t.Errorf("CountFeatures = %d (%v), want 3 current features", n, err)
	}
	if n, _, cur := deleteUnseen(t, s, table, run2.ID, world, false); n != 0 || cur != 3 {
		t.Errorf("after run 2: %d deleted of %d current, want nothing of 3 current", n, cur)
	}
	if _, err := s.FinishRun(ctx, run2.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run2.Close()
	run3, _ := mirrorRun(t, s, table, []*spatial.Feature{a2, c})
	if n, keys, cur := deleteUnseen(t, s, table, run3.ID, world, false); n != 1 || cur != 3 || !slices.Equal(keys, []string{"p.b"}) {
		t.Fatalf("after run 3: %d deleted of %q, %d current; want b's version closed", n, keys, cur)
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 2 {
		t.Errorf("after b was deleted, CountFeatures = %d (%v), want 2 current", n, err)
	}
	// The versions each run wrote or closed are still there to draw.
	_, all := changes(t, s, store.ChangeFilter{RunID: run2.ID, Features: true})
	if len(all) != 2 {
		t.Fatalf("run 2 changes: %+v, want a updated and c inserted", all)
	}
	for _, ch := range all {
		want := map[string]*spatial.Feature{"p.a": a2, "p.c": c}[ch.Key]
		if want == nil || ch.Superseded || !orb.Equal(ch.Geometry, want.Geometry) || ch.Properties["name"] != want.Properties["name"] {
			t.Errorf("run 2 %s %s: %v %v, want %v", ch.Kind, ch.Key, ch.Geometry, ch.Properties, want)
		}
	}
	_, all = changes(t, s, store.ChangeFilter{RunID: run3.ID, Features: true})
	if len(all) != 1 || all[0].Kind != store.ChangeDeleted || !orb.Equal(all[0].Geometry, b.Geometry) || all[0].Properties["name"] != "b" {
		t.Errorf("run 3 changes %+v, want b deleted, as it was", all)
	}
	if err := s.NoteChanges(ctx, run3.ID, "a", store.TaskChanges{History: true, Seen: -1}); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.GetRun(ctx, run3.ID); err != nil || len(rec.Tasks) != 1 || rec.Tasks[0].VersionsClosed != 1 || rec.Tasks[0].FeaturesDeleted != 1 ||
		rec.Tasks[0].FeaturesUnchanged != nil {
		t.Errorf("GetRun(run 3) = %+v (%v), want 1 deleted, 1 version closed", rec.Tasks, err)
	}

	// Append with history keys on the id: an edit closes the old version.
	app := &store.FeatureTable{Name: "append_history", SRID: 4326, Mode: store.ModeAppend, History: true,
		Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, app); err != nil {
		t.Fatal(err)
	}
	run3.Close()
	_, counts = mirrorRun(t, s, app, []*spatial.Feature{a}, []*spatial.Feature{a2})
	if want := []store.Counts{{Inserted: 1}, {Updated: 1}}; !slices.Equal(counts, want) {
		t.Errorf("append with history wrote %+v, want %+v", counts, want)
	}
	if n, err := s.CountFeatures(ctx, app, world); err != nil || n != 1 {
		t.Errorf("append with history: CountFeatures = %d (%v), want 1 current", n, err)
	}
}

// testMirrorKeyColumns: a mirror keyed on properties (target.key) identifies features
// without ids; an existing table without gf_key is refused clearly.
func testMirrorKeyColumns(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := &store.FeatureTable{Name: "roads_mirror", SRID: 4326, Mode: store.ModeMirror, Key: []string{"code", "part"},
		Columns: []store.Column{{Name: "code", Property: "code", Type: store.TypeText}, {Name: "part", Property: "part", Type: store.TypeBigint},
			{Name: "name", Property: "name", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	road := func(code string, part float64, name string) *spatial.Feature {
		return &spatial.Feature{Geometry: orb.Point{part, part}, Properties: map[string]any{"code": code, "part": part, "name": name}}
	}
	_, counts := mirrorRun(t, s, table, []*spatial.Feature{road("A1", 1, "x"), road("A1", 2, "x")}, []*spatial.Feature{road("A1", 1, "y")})
	if want := []store.Counts{{Inserted: 2}, {Updated: 1}}; !slices.Equal(counts, want) {
		t.Errorf("wrote %+v, want %+v", counts, want)
	}
	// A feature without a key value cannot be told apart: its page is refused, not
	// merged into another feature's row.
	run := startRun(t, s, store.RunStart{Flow: "keyless"})
	addUnits(t, s, run.ID, "a", 1)
	src := features{road("A1", 3, "z"), road("", 4, "no code")}
	_, err := commitUnit(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
		return tx.WriteFeatures(ctx, table, &src)
	})
	var ke *store.KeyError
	if !errors.As(err, &ke) || ke.Column != "code" {
		t.Errorf("a feature without a key value: %v, want a *store.KeyError naming code", err)
	}
	plain := typedTable("plain_append", store.ModeAppend)
	if err := s.EnsureFeatureTable(ctx, plain); err != nil {
		t.Fatal(err)
	}
	plain.Mode = store.ModeMirror
	var inc *store.IncompatibleTableError
	if err := s.EnsureFeatureTable(ctx, plain); !errors.As(err, &inc) {
		t.Errorf("an append table taken as a mirror: %v, want an IncompatibleTableError naming gf_key", err)
	}
}

// testMirrorConfirmed: features found by asking the server by id are written as a unit
// of their own: a changed one updated and logged, an unchanged one costing nothing, and
// both count as seen.
func testMirrorConfirmed(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, history := range []bool{false, true} {
		table := mirrorTable(map[bool]string{false: "confirmed", true: "confirmed_history"}[history], history)
		if err := s.EnsureFeatureTable(ctx, table); err != nil {
			t.Fatal(err)
		}
		a, b, c := parcel("p.a", 1, 1, "a"), parcel("p.b", 2, 2, "b"), parcel("p.c", 3, 3, "c")
		run1, _ := mirrorRun(t, s, table, []*spatial.Feature{a, b, c})
		if _, err := s.FinishRun(ctx, run1.ID, store.Done, ""); err != nil {
			t.Fatal(err)
		}
		run1.Close()
		// The listing leaves b and c out; asked by id, the server returns both, b edited.
		run2, _ := mirrorRun(t, s, table, []*spatial.Feature{a})
		if keys, _ := unseen(t, s, table, run2.ID, world, false); !slices.Equal(keys, []string{"p.b", "p.c"}) {
			t.Fatalf("history %v: UnseenFeatures = %q, want p.b and p.c", history, keys)
		}
		b2 := parcel("p.b", 2, 2, "b, edited")
		src := features{b2, c}
		ref := store.UnitRef{RunID: run2.ID, TaskID: "a", Key: "confirmed-by-id"}
		got, err := s.WriteConfirmed(ctx, ref, table, &src)
		if err != nil || got.Updated != 1 || got.Skipped != 1 || got.Inserted != 0 {
			t.Fatalf("history %v: WriteConfirmed = %+v (%v), want b updated and c skipped", history, got, err)
		}
		if keys, _ := unseen(t, s, table, run2.ID, world, false); len(keys) != 0 {
			t.Errorf("history %v: after WriteConfirmed, UnseenFeatures = %q, want none (they count as seen)", history, keys)
		}
		if n, err := s.SeenFeatures(ctx, table, run2.ID, "a"); err != nil || n != 3 {
			t.Errorf("history %v: SeenFeatures = %d (%v), want 3", history, n, err)
		}
		if _, st, err := s.Unit(ctx, ref); err != nil || st != store.Done {
			t.Errorf("history %v: the confirming unit is %v (%v), want done", history, st, err)
		}
		if got, _ := changes(t, s, store.ChangeFilter{RunID: run2.ID}); !slices.Equal(got, []string{"updated p.b"}) {
			t.Errorf("history %v: run 2 changes %q, want b updated", history, got)
		}
		if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 3 {
			t.Errorf("history %v: CountFeatures = %d (%v), want 3 current", history, n, err)
		}
		run2.Close()
	}
}

// testMirrorAbsent: the absence streaks of rows a source cannot be asked about count
// complete runs, once per run, end when a run sees the row and go with the row.
func testMirrorAbsent(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := mirrorTable("absent", false)
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	a, b, c := parcel("p.a", 1, 1, "a"), parcel("p.b", 2, 2, "b"), parcel("p.c", 3, 3, "c")
	finish := func(r *store.Run) {
		t.Helper()
		if _, err := s.FinishRun(ctx, r.ID, store.Done, ""); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	note := func(runID int64, keys ...string) map[string]int {
		t.Helper()
		got, err := s.NoteAbsent(ctx, table, store.Absence{Flow: "m", Task: "a", RunID: runID, Keys: keys})
		if err != nil {
			t.Fatalf("NoteAbsent(run %d, %q): %v", runID, keys, err)
		}
		return got
	}
	run1, _ := mirrorRun(t, s, table, []*spatial.Feature{a, b, c})
	finish(run1)
	run2, _ := mirrorRun(t, s, table, []*spatial.Feature{a})
	if got := note(run2.ID, "p.b", "p.c"); got["p.b"] != 1 || got["p.c"] != 1 || len(got) != 2 {
		t.Fatalf("run 2: NoteAbsent = %v, want b and c absent from 1 run", got)
	}
	if got := note(run2.ID, "p.b", "p.c"); got["p.b"] != 1 || got["p.c"] != 1 {
		t.Errorf("run 2 again (a finish retried): NoteAbsent = %v, want still 1 run each", got)
	}
	finish(run2)
	// Run 3 sees b again: its streak ends; c's grows.
	run3, _ := mirrorRun(t, s, table, []*spatial.Feature{a, b})
	if got := note(run3.ID, "p.c"); got["p.c"] != 2 || len(got) != 1 {
		t.Fatalf("run 3: NoteAbsent = %v, want c absent from 2 runs", got)
	}
	if n, err := s.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: run3.ID, Task: "a", Keys: []string{"p.c"}}); err != nil || n != 1 {
		t.Fatalf("DeleteFeatures(p.c) = %d (%v), want 1", n, err)
	}
	finish(run3)
	// Run 4 misses b: a new streak, from 1. c comes back and goes again: from 1 too.
	run4, _ := mirrorRun(t, s, table, []*spatial.Feature{a, c})
	finish(run4)
	run5, _ := mirrorRun(t, s, table, []*spatial.Feature{a})
	if got := note(run5.ID, "p.b", "p.c"); got["p.b"] != 1 || got["p.c"] != 1 {
		t.Errorf("run 5: NoteAbsent = %v, want b and c absent from 1 run each (b was seen by run 3, c deleted)", got)
	}
	// Nothing to count: the streaks of what the run saw still end.
	run5.Close()
	run6, _ := mirrorRun(t, s, table, []*spatial.Feature{a, b})
	if got := note(run6.ID); len(got) != 0 {
		t.Errorf("run 6 without keys: NoteAbsent = %v, want none", got)
	}
	if got := note(run6.ID, "p.c"); got["p.c"] != 2 || len(got) != 1 {
		t.Errorf("run 6: NoteAbsent = %v, want c absent from 2 runs", got)
	}
	run6.Close()
}
