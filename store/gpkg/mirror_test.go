package gpkg_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// openMirrorStore opens a new, migrated GeoPackage in a temporary directory.
func openMirrorStore(t *testing.T) (*gpkg.Store, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "m.gpkg")
	st, err := gpkg.Open(t.Context(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return st, file
}

// mirrorRun runs flow "m" once: task "a" writes each unit's pages into table, all the
// pages of a unit in its one transaction, and returns the run and each page's counts.
// The caller closes the run (which holds the flow) before the next.
func mirrorRun(t *testing.T, st *gpkg.Store, table *store.FeatureTable, units ...[][]*spatial.Feature) (*store.Run, [][]store.Counts) {
	t.Helper()
	ctx := t.Context()
	run, err := st.StartRun(ctx, store.RunStart{Flow: "m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	if err := st.SetTaskState(ctx, run.ID, "a", "fake", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	planned := make([]store.Unit, len(units))
	for i := range units {
		planned[i] = store.Unit{Key: string(rune('a'+i)) + "0"}
	}
	if err := st.AddUnits(ctx, run.ID, "a", planned); err != nil {
		t.Fatal(err)
	}
	var counts [][]store.Counts
	for i, pages := range units {
		tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: planned[i].Key})
		if err != nil {
			t.Fatal(err)
		}
		var unit []store.Counts
		var sum store.Counts
		for _, p := range pages {
			src := sliceSource(p)
			c, err := tx.WriteFeatures(ctx, table, &src)
			if err != nil {
				tx.Rollback(ctx)
				t.Fatalf("unit %s writing %d features into %s: %v", planned[i].Key, len(p), table.Name, err)
			}
			unit = append(unit, c)
			sum.Inserted, sum.Updated, sum.Skipped = sum.Inserted+c.Inserted, sum.Updated+c.Updated, sum.Skipped+c.Skipped
		}
		if err := tx.Complete(ctx, sum, nil, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, unit)
	}
	return run, counts
}

// endRun records the run's task and the run done and releases the flow.
func endRun(t *testing.T, st *gpkg.Store, run *store.Run) {
	t.Helper()
	if err := st.SetTaskState(t.Context(), run.ID, "a", "fake", store.Done, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishRun(t.Context(), run.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run.Close()
}

// listChanges returns a run's changes as "kind key" and whole.
func listChanges(t *testing.T, st *gpkg.Store, f store.ChangeFilter) ([]string, map[string]store.Change) {
	t.Helper()
	var out []string
	all := map[string]store.Change{}
	if err := st.ListChanges(t.Context(), f, func(c store.Change) error {
		out = append(out, c.Kind+" "+c.Key)
		all[c.Key] = c
		return nil
	}); err != nil {
		t.Fatalf("ListChanges(%+v): %v", f, err)
	}
	return out, all
}

// queryFile runs a query on the file through a connection of its own.
func queryFile(t *testing.T, file, query string, dest ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(query).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// merc is a lon/lat point in Web Mercator.
func merc(x, y float64) orb.Point { return project.WGS84.ToMercator(orb.Point{x, y}) }

func near(a, b orb.Point) bool { return math.Abs(a[0]-b[0]) < 1e-9 && math.Abs(a[1]-b[1]) < 1e-9 }

// TestMirror writes a Web Mercator mirror table in three runs: the counts are exact (a
// feature twice in a page, or in two units, is written once; an unchanged one skipped);
// a unit writing twice sees the keys of both writes; the safety rail stops a deletion
// and leaves everything as it was; an area deletes only the unseen features inside it;
// the change log gives each change's feature in lon/lat, a deleted one from its copy,
// one a later run changed again as superseded.
func TestMirror(t *testing.T) {
	ctx := t.Context()
	st, file := openMirrorStore(t)
	table := &store.FeatureTable{Name: "parcels", SRID: 3857, Mode: store.ModeMirror, Columns: []store.Column{
		{Name: "name", Property: "name", Type: store.TypeText},
		{Name: "n", Property: "n", Type: store.TypeBigint},
		{Name: "ok", Property: "ok", Type: store.TypeBoolean},
	}}
	if err := st.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	parcel := func(id string, x, y float64, name string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: merc(x, y), Properties: map[string]any{"name": name, "n": float64(len(name)), "ok": true}}
	}
	a, b, c, d, e := parcel("p.a", 1, 1, "a"), parcel("p.b", 2, 2, "b"), parcel("p.c", 3, 3, "c"), parcel("p.d", 4, 4, "d"), parcel("p.e", 50, 50, "e")

	run1, counts := mirrorRun(t, st, table,
		[][]*spatial.Feature{{a, b, c, c}},
		[][]*spatial.Feature{{d, a}},
		[][]*spatial.Feature{{e}, {b}}) // two writes in one unit
	want := [][]store.Counts{{{Inserted: 3, Skipped: 1, Overlap: 1}}, {{Inserted: 1, Skipped: 1, Overlap: 1}}, {{Inserted: 1}, {Skipped: 1, Overlap: 1}}}
	if !slices.EqualFunc(counts, want, slices.Equal) {
		t.Errorf("run 1 wrote %+v, want %+v", counts, want)
	}
	if n, err := st.SeenFeatures(ctx, table, run1.ID, "a"); err != nil || n != 5 {
		t.Errorf("SeenFeatures = %d (%v), want 5", n, err)
	}
	var keys string
	queryFile(t, file, "SELECT keys FROM geoflow_seen WHERE unit = 'c0'", &keys)
	if keys != `["p.e","p.b"]` {
		t.Errorf("the unit that wrote twice saw %s, want both writes' keys", keys)
	}
	if res, err := delUnseen(ctx, st, table, run1.ID, world, false, false); err != nil || res != (deletion{current: 5}) {
		t.Errorf("after run 1: %+v (%v), want nothing to delete of 5", res, err)
	}
	endRun(t, st, run1)

	// Upstream: b renamed, c moved, d and e gone.
	b2, c2 := parcel("p.b", 2, 2, "b, renamed"), parcel("p.c", 3, 3.5, "c")
	run2, counts := mirrorRun(t, st, table, [][]*spatial.Feature{{a, b2}}, [][]*spatial.Feature{{c2}})
	if want := [][]store.Counts{{{Skipped: 1, Updated: 1}}, {{Updated: 1}}}; !slices.EqualFunc(counts, want, slices.Equal) {
		t.Errorf("run 2 wrote %+v, want %+v", counts, want)
	}
	if res, err := delUnseen(ctx, st, table, run2.ID, world, false, true); err != nil || res != (deletion{candidates: 2, current: 5}) {
		t.Fatalf("listing run 2's candidates = %+v (%v), want 2 of 5", res, err)
	}
	if n, err := st.CountFeatures(ctx, table, world); err != nil || n != 5 {
		t.Errorf("after listing the candidates, CountFeatures = %d (%v), want 5", n, err)
	}
	if n, err := st.SeenFeatures(ctx, table, run2.ID, "a"); err != nil || n != 3 {
		t.Errorf("after listing the candidates, SeenFeatures = %d (%v), want 3 kept", n, err)
	}
	if got, _ := listChanges(t, st, store.ChangeFilter{RunID: run2.ID}); !slices.Equal(got, []string{"updated p.b", "updated p.c"}) {
		t.Errorf("after listing the candidates, run 2 changes %q, want the updates only", got)
	}
	// Around d only: e, far away, is not a candidate; the rail's base is the area (1 of 1).
	res, err := delUnseen(ctx, st, table, run2.ID, orb.Bound{Min: orb.Point{3.9, 3.9}, Max: orb.Point{4.1, 4.1}}, true, false)
	if err != nil || res != (deletion{deleted: 1, candidates: 1, current: 1}) {
		t.Fatalf("deleting around d = %+v (%v), want d deleted", res, err)
	}
	if n, err := st.CountFeatures(ctx, table, world); err != nil || n != 4 {
		t.Errorf("after the deletion, CountFeatures = %d (%v), want 4", n, err)
	}
	if n, err := st.SeenFeatures(ctx, table, run2.ID, "a"); err != nil || n != 3 {
		t.Errorf("after the deletion, SeenFeatures = %d (%v), want 3: kept until a later run supersedes the run (a finish retried must see them)", n, err)
	}
	if err := st.NoteChanges(ctx, run2.ID, "a", store.TaskChanges{Seen: -1, Note: "area: 1 deleted"}); err != nil {
		t.Fatal(err)
	}
	endRun(t, st, run2)
	rec, err := st.GetRun(ctx, run2.ID)
	if err != nil || len(rec.Tasks) != 1 {
		t.Fatalf("GetRun = %+v (%v)", rec, err)
	}
	if tk := rec.Tasks[0]; tk.FeaturesUpdated != 2 || tk.FeaturesSkipped != 1 || tk.FeaturesDeleted != 1 || tk.VersionsClosed != 0 || tk.MirrorNote != "area: 1 deleted" {
		t.Errorf("task record %+v: want 2 updated, 1 skipped, 1 deleted, the note", tk)
	}
	if rec.FeaturesDeleted != 1 {
		t.Errorf("run FeaturesDeleted = %d, want 1", rec.FeaturesDeleted)
	}
	if runs, err := st.ListRuns(ctx, store.RunFilter{Flow: "m"}); err != nil || len(runs) != 2 || runs[0].FeaturesDeleted != 1 {
		t.Errorf("ListRuns = %+v (%v), want run 2 first with 1 deleted", runs, err)
	}

	got, all := listChanges(t, st, store.ChangeFilter{RunID: run2.ID, Task: "a", Features: true})
	if want := []string{"updated p.b", "updated p.c", "deleted p.d"}; !slices.Equal(got, want) {
		t.Errorf("run 2 changes %q, want %q", got, want)
	}
	for key, f := range map[string]*spatial.Feature{"p.b": b2, "p.c": c2, "p.d": d} {
		ch := all[key]
		p, ok := ch.Geometry.(orb.Point)
		ll := project.Mercator.ToWGS84(f.Geometry.(orb.Point))
		if !ok || !near(p, ll) || ch.SRID != 4326 || ch.Superseded || ch.Table != "public.parcels" || ch.FeatureID != key {
			t.Errorf("%s: %+v, want %v in lon/lat (4326)", key, ch, ll)
		}
		wantProps := map[string]any{"name": f.Properties["name"], "n": f.Properties["n"], "ok": true}
		if !mapsEqual(ch.Properties, wantProps) {
			t.Errorf("%s: properties %v, want %v", key, ch.Properties, wantProps)
		}
	}

	run3, _ := mirrorRun(t, st, table, [][]*spatial.Feature{{a, parcel("p.b", 2, 2, "b again"), c2, e}})
	endRun(t, st, run3)
	_, all = listChanges(t, st, store.ChangeFilter{RunID: run2.ID, Features: true})
	if ch := all["p.b"]; !ch.Superseded || ch.Geometry != nil || ch.Properties != nil {
		t.Errorf("run 2's b after run 3 changed it: %+v, want superseded without a feature", ch)
	}
	if ch := all["p.c"]; ch.Superseded || ch.Geometry == nil {
		t.Errorf("run 2's c, unchanged since: %+v, want its feature", ch)
	}
}

func mapsEqual(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestMirrorHistory: with history an edit closes the current version and opens one that
// starts when it ends, a deletion closes it; the table keeps every version, the view
// <table>_current one per feature, which GDAL lists as a layer of its own; the change
// log draws the versions each run opened or closed.
func TestMirrorHistory(t *testing.T) {
	ctx := t.Context()
	st, file := openMirrorStore(t)
	table := &store.FeatureTable{Name: "parcels", SRID: 4326, Mode: store.ModeMirror, History: true,
		Columns: []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}}
	if err := st.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	parcel := func(id string, x, y float64, name string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: orb.Point{x, y}, Properties: map[string]any{"name": name}}
	}
	a, b, c := parcel("p.a", 11, 48, "a"), parcel("p.b", 11.5, 48.5, "b"), parcel("p.c", 12, 49, "c")
	run1, counts := mirrorRun(t, st, table, [][]*spatial.Feature{{a, b, c}})
	if want := [][]store.Counts{{{Inserted: 3}}}; !slices.EqualFunc(counts, want, slices.Equal) {
		t.Errorf("run 1 wrote %+v, want %+v", counts, want)
	}
	endRun(t, st, run1)
	if err := st.FinishFeatureTable(ctx, table); err != nil { // the R-tree, for the area below
		t.Fatal(err)
	}

	a2 := parcel("p.a", 11.2, 48, "a, moved")
	run2, counts := mirrorRun(t, st, table, [][]*spatial.Feature{{a2, b, a2}}, [][]*spatial.Feature{{c}})
	if want := [][]store.Counts{{{Updated: 1, Skipped: 2, Overlap: 1}}, {{Skipped: 1}}}; !slices.EqualFunc(counts, want, slices.Equal) {
		t.Errorf("run 2 wrote %+v, want %+v", counts, want)
	}
	endRun(t, st, run2)

	run3, _ := mirrorRun(t, st, table, [][]*spatial.Feature{{a2, c}})
	area := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
	res, err := delUnseen(ctx, st, table, run3.ID, area, true, false)
	if err != nil || res != (deletion{deleted: 1, candidates: 1, current: 3}) {
		t.Fatalf("deleting the unseen = %+v (%v), want b's version closed", res, err)
	}
	if err := st.NoteChanges(ctx, run3.ID, "a", store.TaskChanges{History: true, Seen: -1}); err != nil {
		t.Fatal(err)
	}
	endRun(t, st, run3)
	if n, err := st.CountFeatures(ctx, table, world); err != nil || n != 2 {
		t.Errorf("CountFeatures = %d (%v), want 2 current", n, err)
	}
	if rec, err := st.GetRun(ctx, run3.ID); err != nil || rec.Tasks[0].VersionsClosed != 1 || rec.Tasks[0].MirrorNote != "" {
		t.Errorf("GetRun(run 3) = %+v (%v), want 1 version closed", rec.Tasks, err)
	}

	var versions, current, keys, meet int
	queryFile(t, file, `SELECT count(*) FROM parcels`, &versions)
	queryFile(t, file, `SELECT count(*), count(DISTINCT gf_key) FROM parcels_current`, &current, &keys)
	queryFile(t, file, `SELECT count(*) FROM parcels o JOIN parcels n ON n.gf_key = o.gf_key AND n.gf_valid_from = o.gf_valid_to
		WHERE o.gf_key = 'p.a' AND o.gf_closed_run = `+strconv.FormatInt(run2.ID, 10)+` AND n.gf_run_id = `+strconv.FormatInt(run2.ID, 10), &meet)
	if versions != 4 || current != 2 || keys != 2 || meet != 1 {
		t.Errorf("%d versions (want 4: a twice, b, c), %d current of %d keys (want 2, 2), a's versions meet: %d (want 1)",
			versions, current, keys, meet)
	}

	_, all := listChanges(t, st, store.ChangeFilter{RunID: run2.ID, Features: true})
	if ch := all["p.a"]; len(all) != 1 || ch.Kind != store.ChangeUpdated || !orb.Equal(ch.Geometry, a2.Geometry) || ch.Properties["name"] != "a, moved" || ch.SRID != 4326 {
		t.Errorf("run 2 changes %+v, want a updated to a2", all)
	}
	_, all = listChanges(t, st, store.ChangeFilter{RunID: run3.ID, Features: true})
	if ch := all["p.b"]; len(all) != 1 || ch.Kind != store.ChangeDeleted || !orb.Equal(ch.Geometry, b.Geometry) || ch.Properties["name"] != "b" {
		t.Errorf("run 3 changes %+v, want b deleted, as it was", all)
	}
	var copied int
	queryFile(t, file, `SELECT count(*) FROM geoflow_changes WHERE geom IS NOT NULL OR properties IS NOT NULL`, &copied)
	if copied != 0 {
		t.Errorf("%d changes hold a copy of the feature; with history the table keeps it", copied)
	}
	st.Close()

	out, err := exec.Command("python3", "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py",
		"--extra", "--warning-as-error", file).CombinedOutput()
	if err != nil {
		t.Errorf("GDAL's validate_gpkg.py refuses the file: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"layers", []string{file}, []string{"1: parcels\n", "2: parcels_current\n"}},
		{"the view", []string{"-so", file, "parcels_current"}, []string{"Feature Count: 2", `ID["EPSG",4326]`, "Extent: (11.000000, 48.000000) - (12.000000, 49.000000)"}},
		{"every version", []string{"-so", file, "parcels"}, []string{"Feature Count: 4"}},
		{"a spatial filter on the view", []string{"-q", "-spat", "11.1", "47.9", "11.3", "48.1", file, "parcels_current"}, []string{"name (String) = a, moved"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("ogrinfo", tc.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("ogrinfo %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("ogrinfo %s does not say %q:\n%s", strings.Join(tc.args, " "), w, out)
				}
			}
		})
	}
}

// TestMirrorTables: a table is written the way it was made: a plain table is not taken
// for a mirror, a mirror not for a plain table nor for one with history; a mirror in a
// CRS the store cannot bring an area into deletes all its unseen features, or, with an
// area, nothing, failing with store.ErrNoTransform.
func TestMirrorTables(t *testing.T) {
	ctx := t.Context()
	st, _ := openMirrorStore(t)
	cols := []store.Column{{Name: "name", Property: "name", Type: store.TypeText}}
	plain := &store.FeatureTable{Name: "plain", SRID: 4326, Columns: cols}
	mirror := &store.FeatureTable{Name: "mirror", SRID: 27700, Mode: store.ModeMirror, Columns: cols}
	for _, tb := range []*store.FeatureTable{plain, mirror} {
		if err := st.EnsureFeatureTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name    string
		table   store.FeatureTable
		problem string
	}{
		{"a plain table as a mirror", store.FeatureTable{Name: "plain", SRID: 4326, Mode: store.ModeMirror, Columns: cols}, `"gf_key" is missing`},
		{"a plain table with history", store.FeatureTable{Name: "plain", SRID: 4326, History: true, Columns: cols}, `"gf_valid_from" is missing`},
		{"a mirror as an append table", store.FeatureTable{Name: "mirror", SRID: 27700, Columns: cols}, `"gf_key" keys the table`},
		{"a mirror as an upsert table", store.FeatureTable{Name: "mirror", SRID: 27700, Mode: store.ModeUpsert, Key: []string{"name"}, Columns: cols}, `"gf_key" keys the table`},
		{"a mirror with history", store.FeatureTable{Name: "mirror", SRID: 27700, Mode: store.ModeMirror, History: true, Columns: cols}, `"gf_valid_to" is missing`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var inc *store.IncompatibleTableError
			if err := st.EnsureFeatureTable(ctx, &tt.table); !errors.As(err, &inc) || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("EnsureFeatureTable = %v, want an IncompatibleTableError saying %s", err, tt.problem)
			}
		})
	}

	f := func(id string) *spatial.Feature {
		return &spatial.Feature{ID: id, Geometry: orb.Point{690000, 5330000}, Properties: map[string]any{"name": id}}
	}
	run1, _ := mirrorRun(t, st, mirror, [][]*spatial.Feature{{f("1"), f("2")}})
	endRun(t, st, run1)
	run2, _ := mirrorRun(t, st, mirror, [][]*spatial.Feature{{f("1")}})
	area := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
	if res, err := delUnseen(ctx, st, mirror, run2.ID, area, true, false); !errors.Is(err, store.ErrNoTransform) || res.deleted != 0 {
		t.Errorf("deleting in an area of EPSG:27700 = %+v (%v), want store.ErrNoTransform", res, err)
	}
	res, err := delUnseen(ctx, st, mirror, run2.ID, world, false, false)
	if err != nil || res != (deletion{deleted: 1, candidates: 1, current: 2}) {
		t.Errorf("deleting without an area = %+v (%v), want 2 deleted", res, err)
	}
	_, all := listChanges(t, st, store.ChangeFilter{RunID: run2.ID, Features: true})
	if ch := all["2"]; ch.Kind != store.ChangeDeleted || ch.SRID != 27700 || !orb.Equal(ch.Geometry, orb.Point{690000, 5330000}) {
		t.Errorf("the deletion of 2: %+v, want its point in EPSG:27700", ch)
	}
}

// world is every lon/lat.
var world = orb.Bound{Min: orb.Point{-180, -90}, Max: orb.Point{180, 90}}

// deletion is what delUnseen did.
type deletion struct{ deleted, candidates, current int64 }

// delUnseen deletes, through the store's primitives, the rows of table in area that
// run did not see (only lists them with listOnly), as a finish that found them gone does.
func delUnseen(ctx context.Context, st store.Store, table *store.FeatureTable, runID int64, area orb.Bound, partial, listOnly bool) (deletion, error) {
	u, err := st.UnseenFeatures(ctx, table, store.UnseenQuery{RunID: runID, Task: "a", Area: area, Partial: partial})
	if err != nil {
		return deletion{}, err
	}
	res := deletion{candidates: int64(len(u.Features)), current: u.Current}
	if listOnly {
		return res, nil
	}
	keys := make([]string, len(u.Features))
	for i, f := range u.Features {
		keys[i] = f.Key
	}
	res.deleted, err = st.DeleteFeatures(ctx, table, store.DeleteKeys{RunID: runID, Task: "a", Keys: keys})
	if err != nil {
		return res, err
	}
	return res, st.ForgetSeen(ctx, "m", "a", runID)
}
