package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// sameUnits compares units as planned: keys, parents, boxes and specs (by value).
func sameUnits(t *testing.T, what string, got, want []store.Unit) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d units %v, want %d %v", what, len(got), unitKeys(got), len(want), unitKeys(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Key != w.Key || g.Parent != w.Parent || !sameBound(g.BBox, w.BBox) || !sameJSON(g.Spec, w.Spec) {
			t.Errorf("%s: unit %d = {%s parent %q bbox %s spec %s}, want {%s parent %q bbox %s spec %s}", what, i,
				g.Key, g.Parent, fmtBound(g.BBox), g.Spec, w.Key, w.Parent, fmtBound(w.BBox), w.Spec)
		}
	}
}

func unitKeys(us []store.Unit) []string {
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = u.Key
	}
	return keys
}

// testUnits: AddUnits records units once (planning again leaves them as they are),
// OpenUnits lists those not done in key order with what they were planned with, Unit
// reads one, and EndUnit records an interrupted one, which stays open.
func testUnits(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	other := startRun(t, s, store.RunStart{Flow: "roads"})
	b := func(x0, y0, x1, y1 float64) *orb.Bound {
		return &orb.Bound{Min: orb.Point{x0, y0}, Max: orb.Point{x1, y1}}
	}
	planned := []store.Unit{
		{Key: "u002", BBox: b(2, 0, 3, 1), Spec: json.RawMessage(`{"page": 2, "layer": "q"}`)},
		{Key: "u000", BBox: b(-180, -85.5, 0.125, 1e-7)},
		{Key: "u001", Spec: json.RawMessage(`{"href":"https://example.com/a.tif","n":[1,2,3]}`)},
		{Key: "u001.0", Parent: "u001", BBox: b(0, 0, 0.5, 0.5)},
	}
	// Tasks are recorded before their units (PostGIS keys units on their task).
	for _, task := range []struct {
		run  int64
		name string
	}{{run.ID, "a"}, {run.ID, "b"}, {other.ID, "a"}} {
		if err := s.SetTaskState(ctx, task.run, task.name, "fake", store.Running, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddUnits(ctx, run.ID, "a", planned); err != nil {
		t.Fatal(err)
	}
	// Planning again (a resumed run) keeps what was recorded and adds what is new.
	again := []store.Unit{
		{Key: "u000", BBox: b(9, 9, 10, 10), Spec: json.RawMessage(`{"changed":true}`)},
		{Key: "u003"},
	}
	if err := s.AddUnits(ctx, run.ID, "a", again); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUnits(ctx, run.ID, "a", nil); err != nil {
		t.Errorf("adding no units: %v", err)
	}
	// The same keys in another task and another run are other units.
	if err := s.AddUnits(ctx, run.ID, "b", []store.Unit{{Key: "u000"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUnits(ctx, other.ID, "a", []store.Unit{{Key: "u000"}}); err != nil {
		t.Fatal(err)
	}

	want := []store.Unit{planned[1], planned[2], planned[3], planned[0], again[1]}
	open, err := s.OpenUnits(ctx, run.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	sameUnits(t, "OpenUnits", open, want)
	if open, err := s.OpenUnits(ctx, run.ID, "b"); err != nil || !slices.Equal(unitKeys(open), []string{"u000"}) {
		t.Errorf("open units of task b: %v (%v), want [u000]", unitKeys(open), err)
	}
	if open, err := s.OpenUnits(ctx, run.ID, "none"); err != nil || len(open) != 0 {
		t.Errorf("open units of a task with none: %v (%v)", unitKeys(open), err)
	}

	for _, w := range want {
		u, state, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: w.Key})
		if err != nil {
			t.Fatal(err)
		}
		if state != store.Pending {
			t.Errorf("unit %s is %q, want pending", w.Key, state)
		}
		sameUnits(t, "Unit "+w.Key, []store.Unit{u}, []store.Unit{w})
	}
	if _, _, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Unit of a missing unit: %v, want store.ErrNotFound", err)
	}

	ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u001"}
	if err := s.EndUnit(ctx, ref, store.Interrupted, "interrupted by shutdown"); err != nil {
		t.Fatal(err)
	}
	if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Interrupted {
		t.Errorf("interrupted unit is %q (%v), want interrupted", state, err)
	}
	if open, err := s.OpenUnits(ctx, run.ID, "a"); err != nil || !slices.Contains(unitKeys(open), "u001") {
		t.Errorf("open units %v (%v): an interrupted unit is still open", unitKeys(open), err)
	}
	completeUnit(t, s, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u000"}, store.Counts{})
	open, err = s.OpenUnits(ctx, run.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"u001", "u001.0", "u002", "u003"}; !slices.Equal(unitKeys(open), want) {
		t.Errorf("open units after u000 is done: %v, want %v", unitKeys(open), want)
	}
	if _, state, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u000"}); err != nil || state != store.Done {
		t.Errorf("completed unit is %q (%v), want done", state, err)
	}
	// Planning a done unit again leaves it done.
	if err := s.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: "u000"}}); err != nil {
		t.Fatal(err)
	}
	if _, state, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u000"}); err != nil || state != store.Done {
		t.Errorf("a done unit planned again is %q (%v), want done", state, err)
	}
}

// testUnitChildren: Complete records the children a unit planned as pending units of its
// task with their Parent set to it, in the unit's transaction.
func testUnitChildren(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 1)
	ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}
	children := []store.Unit{
		{Key: "u000.0", BBox: &orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{0.5, 0.5}}, Spec: json.RawMessage(`{"split":0}`)},
		{Key: "u000.1", Parent: "someone else", BBox: &orb.Bound{Min: orb.Point{0.5, 0}, Max: orb.Point{1, 0.5}}},
	}
	tx, err := s.BeginUnit(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Complete(ctx, store.Counts{Inserted: 1, Short: 3}, children, nil, time.Now()); err != nil {
		tx.Rollback(ctx)
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx) // a no-op after Commit
	if n, err := s.ShortFeatures(ctx, run.ID, "a"); err != nil || n != 3 {
		t.Errorf("ShortFeatures = %d (%v), want the 3 the unit recorded", n, err)
	}

	if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Done {
		t.Errorf("the parent is %q (%v), want done", state, err)
	}
	open, err := s.OpenUnits(ctx, run.ID, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Unit{children[0], children[1]}
	want[0].Parent, want[1].Parent = ref.Key, ref.Key
	sameUnits(t, "children", open, want)
	for _, c := range want {
		if _, state, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: c.Key}); err != nil || state != store.Pending {
			t.Errorf("child %s is %q (%v), want pending", c.Key, state, err)
		}
	}
	if children[1].Parent != "someone else" {
		t.Errorf("Complete changed the caller's children: parent %q", children[1].Parent)
	}
}

// testUnitRollback: a rolled-back unit leaves nothing behind: not its features, not its
// children, not its done state.
func testUnitRollback(t *testing.T, s store.Store) {
	ctx := t.Context()
	table := &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "a", 2)
	ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(0)}
	fs := []*spatial.Feature{
		{ID: "p.1", Geometry: orb.Point{0.5, 0.5}, Properties: map[string]any{"name": "one"}},
		{ID: "p.2", Geometry: orb.Point{0.6, 0.6}, Properties: map[string]any{"name": "two"}},
	}

	tx, err := s.BeginUnit(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	src := features(slices.Clone(fs))
	c, err := tx.WriteFeatures(ctx, table, &src)
	if err != nil || c.Inserted != 2 {
		tx.Rollback(ctx)
		t.Fatalf("writing in the unit to roll back: %+v, %v; want 2 inserted", c, err)
	}
	if err := tx.Complete(ctx, c, []store.Unit{{Key: "u000.0"}}, nil, time.Now()); err != nil {
		tx.Rollback(ctx)
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	tx.Rollback(ctx) // twice is harmless

	world := orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 0 {
		t.Errorf("%d features (%v) after the rollback, want 0", n, err)
	}
	if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Pending {
		t.Errorf("rolled-back unit is %q (%v), want pending", state, err)
	}
	if _, _, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u000.0"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the child of a rolled-back unit: %v, want store.ErrNotFound", err)
	}
	open, err := s.OpenUnits(ctx, run.ID, "a")
	if err != nil || !slices.Equal(unitKeys(open), []string{unitKey(0), unitKey(1)}) {
		t.Errorf("open units %v (%v), want both still open", unitKeys(open), err)
	}

	// The unit done again writes the same features as new.
	if c := writeFeatures(t, s, ref, table, fs...); c.Inserted != 2 || c.Skipped != 0 {
		t.Errorf("writing the rolled-back features again: %+v, want 2 inserted", c)
	}
	if n, err := s.CountFeatures(ctx, table, world); err != nil || n != 2 {
		t.Errorf("%d features (%v) after the commit, want 2", n, err)
	}
	if _, state, err := s.Unit(ctx, ref); err != nil || state != store.Done {
		t.Errorf("committed unit is %q (%v), want done", state, err)
	}

	// A unit that wrote nothing and is rolled back leaves nothing either.
	tx, err = s.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(1)})
	if err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	if _, state, err := s.Unit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: unitKey(1)}); err != nil || state != store.Pending {
		t.Errorf("unit begun and rolled back is %q (%v), want pending", state, err)
	}
}
