package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

func sum(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// sameFile compares a looked-up file with the one expected; nil is no row.
func sameFile(t *testing.T, what string, got, want *store.StoredFile) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %+v, want %+v", what, got, want)
	case got.Status != want.Status || got.Path != want.Path || !bytes.Equal(got.Hash, want.Hash) || got.Bytes != want.Bytes ||
		got.ETag != want.ETag || got.LastModified != want.LastModified:
		t.Errorf("%s = %+v, want %+v", what, *got, *want)
	}
}

// lookupTile looks one tile up, as a block of one.
func lookupTile(ctx context.Context, s store.Store, tt *store.TileTable, z, x, y int) (*store.StoredFile, error) {
	found, err := s.LookupTiles(ctx, tt, store.TileRange{Z: z, X0: x, Y0: y, X1: x, Y1: y})
	if err != nil {
		return nil, err
	}
	if len(found) > 1 {
		return nil, fmt.Errorf("LookupTiles of one tile found %d", len(found))
	}
	return found[[2]int{x, y}], nil
}

// testTiles: a tile table is created once; UpsertTiles records a tile in a unit's
// transaction (Inserted, then Updated) and LookupTiles reads back what was stored.
func testTiles(t *testing.T, s store.Store) {
	ctx := t.Context()
	tt := &store.TileTable{Schema: "tiles", Name: "basemap"}
	for i := range 2 {
		if err := s.EnsureTileTable(ctx, tt); err != nil {
			t.Fatalf("EnsureTileTable (%d): %v", i+1, err)
		}
	}
	if f, err := lookupTile(ctx, s, tt, 1, 1, 0); err != nil || f != nil {
		t.Fatalf("LookupTiles before any row = %+v, %v; want nil, nil", f, err)
	}
	run := startRun(t, s, store.RunStart{Flow: "basemap"})
	addUnits(t, s, run.ID, "tiles", 5)
	fp := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{180, 85.0511287798066}}
	steps := []struct {
		name    string
		row     store.TileRow
		want    store.Counts
		z, x, y int
		stored  *store.StoredFile
	}{
		{name: "a new tile", row: store.TileRow{Z: 1, X: 1, Y: 0, Footprint: fp, Status: store.FileOK, Path: "/t/1/1/0.png",
			Hash: sum("a"), Bytes: 10, ContentType: "image/png", ETag: `"a"`, LastModified: "Wed, 01 May 2024 10:00:00 GMT"},
			want: store.Counts{Inserted: 1, Bytes: 10}, z: 1, x: 1, y: 0,
			stored: &store.StoredFile{Status: store.FileOK, Path: "/t/1/1/0.png", Hash: sum("a"), Bytes: 10, ETag: `"a"`,
				LastModified: "Wed, 01 May 2024 10:00:00 GMT"}},
		{name: "the tile changed", row: store.TileRow{Z: 1, X: 1, Y: 0, Footprint: fp, Status: store.FileOK, Path: "/t/1/1/0.png",
			Hash: sum("b"), Bytes: 12, ContentType: "image/png", ETag: `W/"b"`},
			want: store.Counts{Updated: 1, Bytes: 12}, z: 1, x: 1, y: 0,
			stored: &store.StoredFile{Status: store.FileOK, Path: "/t/1/1/0.png", Hash: sum("b"), Bytes: 12, ETag: `W/"b"`}},
		{name: "a missing tile", row: store.TileRow{Z: 2, X: 3, Y: 1, Footprint: fp, Status: store.FileMissing},
			want: store.Counts{Inserted: 1}, z: 2, x: 3, y: 1,
			stored: &store.StoredFile{Status: store.FileMissing}},
		{name: "the missing tile found", row: store.TileRow{Z: 2, X: 3, Y: 1, Footprint: fp, Status: store.FileOK, Path: "/t/2/3/1.png",
			Hash: sum("c"), Bytes: 3},
			want: store.Counts{Updated: 1, Bytes: 3}, z: 2, x: 3, y: 1,
			stored: &store.StoredFile{Status: store.FileOK, Path: "/t/2/3/1.png", Hash: sum("c"), Bytes: 3}},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ref := store.UnitRef{RunID: run.ID, TaskID: "tiles", Key: unitKey(i)}
			c, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.UpsertTiles(ctx, tt, []store.TileRow{st.row})
			})
			if err != nil {
				t.Fatal(err)
			}
			if c != st.want {
				t.Errorf("UpsertTiles = %+v, want %+v", c, st.want)
			}
			f, err := lookupTile(ctx, s, tt, st.z, st.x, st.y)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, "LookupTiles", f, st.stored)
		})
	}
	if f, err := lookupTile(ctx, s, tt, 1, 0, 1); err != nil || f != nil {
		t.Errorf("LookupTiles of a tile never stored = %+v, %v; want nil, nil", f, err)
	}

	// A rolled-back unit leaves no tile.
	tx, err := s.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "tiles", Key: unitKey(4)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tx.UpsertTiles(ctx, tt, []store.TileRow{{Z: 3, X: 0, Y: 0, Footprint: fp, Status: store.FileOK, Path: "/t/3/0/0.png", Hash: sum("d"), Bytes: 1}})
	tx.Rollback(ctx)
	if err != nil || c.Inserted != 1 {
		t.Fatalf("UpsertTiles in the unit rolled back: %+v, %v", c, err)
	}
	if f, err := lookupTile(ctx, s, tt, 3, 0, 0); err != nil || f != nil {
		t.Errorf("LookupTiles of a rolled-back tile = %+v, %v; want nil, nil", f, err)
	}
}

// testTileBlocks: UpsertTiles records a block of tiles in one call, counting new and
// changed rows (a tile named twice is recorded once, as its last row), and LookupTiles
// answers exactly the tiles of its range: not a neighbour outside it, not another level.
func testTileBlocks(t *testing.T, s store.Store) {
	for _, inStore := range []bool{false, true} {
		t.Run(fmt.Sprintf("in store %v", inStore), func(t *testing.T) {
			ctx := t.Context()
			tt := &store.TileTable{Name: fmt.Sprintf("blocks_%v", inStore), InStore: inStore}
			if err := s.EnsureTileTable(ctx, tt); err != nil {
				if inStore {
					t.Logf("this store keeps no tiles itself: %v", err) // PostGIS
					return
				}
				t.Fatal(err)
			}
			run := startRun(t, s, store.RunStart{Flow: "blocks"})
			addUnits(t, s, run.ID, "tiles", 3)
			row := func(z, x, y int, content string) store.TileRow {
				r := store.TileRow{Z: z, X: x, Y: y, Footprint: orb.Bound{Min: orb.Point{float64(x), float64(-y - 1)}, Max: orb.Point{float64(x + 1), float64(-y)}},
					Status: store.FileOK, Hash: sum(content), Bytes: int64(len(content)), ETag: `"` + content + `"`}
				if inStore {
					r.Data = []byte(content)
				} else {
					r.Path = fmt.Sprintf("/t/%d/%d/%d.png", z, x, y)
				}
				return r
			}
			var first []store.TileRow
			for x := 10; x < 14; x++ {
				for y := 20; y < 24; y++ {
					first = append(first, row(8, x, y, fmt.Sprintf("v1 %d%d", x, y)))
				}
			}
			first = append(first, row(9, 11, 21, "another level"), row(8, 14, 20, "a neighbour"))
			ref := store.UnitRef{RunID: run.ID, TaskID: "tiles", Key: unitKey(0)}
			c, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.UpsertTiles(ctx, tt, first)
			})
			if want := (store.Counts{Inserted: 18, Bytes: sumBytes(first)}); err != nil || c != want {
				t.Fatalf("UpsertTiles of 18 new tiles = %+v, %v; want %+v", c, err, want)
			}
			// The block again: two tiles changed, one of them named twice (the last row wins).
			second := []store.TileRow{row(8, 10, 20, "v2 first"), row(8, 13, 23, "v2 ignored"), row(8, 11, 20, "v1 1120"), row(8, 13, 23, "v2 last")}
			ref.Key = unitKey(1)
			c, err = commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.UpsertTiles(ctx, tt, second)
			})
			if want := (store.Counts{Updated: 3, Bytes: sumBytes(store.DistinctTiles(second))}); err != nil || c != want {
				t.Fatalf("UpsertTiles of 3 tiles, one named twice = %+v, %v; want %+v", c, err, want)
			}
			found, err := s.LookupTiles(ctx, tt, store.TileRange{Z: 8, X0: 10, Y0: 20, X1: 13, Y1: 23})
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 16 {
				t.Errorf("LookupTiles of a 4x4 block found %d tiles, want 16", len(found))
			}
			for xy, want := range map[[2]int]string{{10, 20}: "v2 first", {13, 23}: "v2 last", {11, 20}: "v1 1120", {12, 22}: "v1 1222"} {
				if f := found[xy]; f == nil || !bytes.Equal(f.Hash, sum(want)) || f.ETag != `"`+want+`"` {
					t.Errorf("tile 8/%d/%d = %+v, want the row of %q", xy[0], xy[1], f, want)
				}
			}
			if found, err := s.LookupTiles(ctx, tt, store.TileRange{Z: 8, X0: 0, Y0: 0, X1: 9, Y1: 255}); err != nil || len(found) != 0 {
				t.Errorf("LookupTiles of a range without rows = %v, %v; want none", found, err)
			}
			if c, err := commitUnit(ctx, s, store.UnitRef{RunID: run.ID, TaskID: "tiles", Key: unitKey(2)},
				func(ctx context.Context, tx store.UnitTx) (store.Counts, error) { return tx.UpsertTiles(ctx, tt, nil) }); err != nil || c != (store.Counts{}) {
				t.Errorf("UpsertTiles of no rows = %+v, %v; want nothing", c, err)
			}
		})
	}
}

func sumBytes(rows []store.TileRow) int64 {
	var n int64
	for _, r := range rows {
		n += r.Bytes
	}
	return n
}

// testTilesInStore: a tile table kept in the store (a GeoPackage tile pyramid) indexes
// its tiles as a file table does, without paths; a store that cannot keep tiles (PostGIS)
// refuses the table in EnsureTileTable, as store.TileTable documents.
func testTilesInStore(t *testing.T, s store.Store) {
	ctx := t.Context()
	tt := &store.TileTable{Name: "basemap", InStore: true}
	if err := s.EnsureTileTable(ctx, tt); err != nil {
		t.Logf("this store keeps no tiles itself: %v", err)
		return
	}
	if err := s.EnsureTileTable(ctx, tt); err != nil {
		t.Fatalf("EnsureTileTable again: %v", err)
	}
	run := startRun(t, s, store.RunStart{Flow: "basemap"})
	addUnits(t, s, run.ID, "tiles", 3)
	fp := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{180, 85.0511287798066}}
	steps := []struct {
		name   string
		row    store.TileRow
		want   store.Counts
		stored *store.StoredFile
	}{
		{name: "a new tile", row: store.TileRow{Z: 1, X: 1, Y: 0, Footprint: fp, Status: store.FileOK, Data: []byte("tile one"),
			Hash: sum("tile one"), Bytes: 8, ContentType: "image/png", ETag: `"1"`},
			want:   store.Counts{Inserted: 1, Bytes: 8},
			stored: &store.StoredFile{Status: store.FileOK, Hash: sum("tile one"), Bytes: 8, ETag: `"1"`}},
		{name: "the tile changed", row: store.TileRow{Z: 1, X: 1, Y: 0, Footprint: fp, Status: store.FileOK, Data: []byte("tile two!"),
			Hash: sum("tile two!"), Bytes: 9, ContentType: "image/png", ETag: `"2"`},
			want:   store.Counts{Updated: 1, Bytes: 9},
			stored: &store.StoredFile{Status: store.FileOK, Hash: sum("tile two!"), Bytes: 9, ETag: `"2"`}},
		{name: "the tile is gone", row: store.TileRow{Z: 1, X: 1, Y: 0, Footprint: fp, Status: store.FileMissing},
			want:   store.Counts{Updated: 1},
			stored: &store.StoredFile{Status: store.FileMissing}},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ref := store.UnitRef{RunID: run.ID, TaskID: "tiles", Key: unitKey(i)}
			c, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.UpsertTiles(ctx, tt, []store.TileRow{st.row})
			})
			if err != nil {
				t.Fatal(err)
			}
			if c != st.want {
				t.Errorf("UpsertTiles = %+v, want %+v", c, st.want)
			}
			f, err := lookupTile(ctx, s, tt, 1, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, "LookupTiles", f, st.stored)
		})
	}
	if f, err := lookupTile(ctx, s, tt, 2, 0, 0); err != nil || f != nil {
		t.Errorf("LookupTiles of a tile never stored = %+v, %v; want nil, nil", f, err)
	}
}

// testAssets: as testTiles, for imagery files keyed on (collection, item, asset).
func testAssets(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := &store.AssetTable{Name: "scenes"}
	for i := range 2 {
		if err := s.EnsureAssetTable(ctx, at); err != nil {
			t.Fatalf("EnsureAssetTable (%d): %v", i+1, err)
		}
	}
	if f, err := s.LookupAsset(ctx, at, "c", "i", "visual"); err != nil || f != nil {
		t.Fatalf("LookupAsset before any row = %+v, %v; want nil, nil", f, err)
	}
	run := startRun(t, s, store.RunStart{Flow: "scenes"})
	addUnits(t, s, run.ID, "stac", 3)
	dt := time.Date(2024, 5, 1, 10, 30, 0, 0, time.UTC)
	full := store.AssetRow{Collection: "c", Item: "i", Asset: "visual",
		Footprint: orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 1}, {0, 0}}}, Datetime: &dt,
		Properties: json.RawMessage(`{"gsd": 0.2, "platform": "x"}`), Href: "https://example.com/i/visual.tif", Path: "/data/c/i/visual.tif",
		Hash: sum("v1"), Checksum: "1220" + "ab", Bytes: 5, ContentType: "image/tiff; application=geotiff", ETag: `"v1"`,
		LastModified: "Wed, 01 May 2024 10:00:00 GMT"}
	changed := full
	changed.Hash, changed.Bytes, changed.ETag, changed.LastModified, changed.Properties = sum("v2"), 7, `"v2"`, "", nil
	bare := store.AssetRow{Collection: "c", Item: "j", Asset: "thumbnail", Path: "/data/c/j/thumbnail.png", Hash: sum("t"), Bytes: 2}
	steps := []struct {
		name   string
		row    store.AssetRow
		want   store.Counts
		stored *store.StoredFile
	}{
		{name: "a new asset", row: full, want: store.Counts{Inserted: 1, Bytes: 5},
			stored: &store.StoredFile{Status: store.FileOK, Path: full.Path, Hash: sum("v1"), Bytes: 5, ETag: `"v1"`, LastModified: full.LastModified}},
		{name: "the asset changed", row: changed, want: store.Counts{Updated: 1, Bytes: 7},
			stored: &store.StoredFile{Status: store.FileOK, Path: full.Path, Hash: sum("v2"), Bytes: 7, ETag: `"v2"`}},
		{name: "an asset without footprint, time or properties", row: bare, want: store.Counts{Inserted: 1, Bytes: 2},
			stored: &store.StoredFile{Status: store.FileOK, Path: bare.Path, Hash: sum("t"), Bytes: 2}},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ref := store.UnitRef{RunID: run.ID, TaskID: "stac", Key: unitKey(i)}
			c, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
				return tx.UpsertAsset(ctx, at, st.row)
			})
			if err != nil {
				t.Fatal(err)
			}
			if c != st.want {
				t.Errorf("UpsertAsset = %+v, want %+v", c, st.want)
			}
			f, err := s.LookupAsset(ctx, at, st.row.Collection, st.row.Item, st.row.Asset)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, "LookupAsset", f, st.stored)
		})
	}
	for _, key := range [][3]string{{"c", "i", "other"}, {"c", "x", "visual"}, {"d", "i", "visual"}} {
		if f, err := s.LookupAsset(ctx, at, key[0], key[1], key[2]); err != nil || f != nil {
			t.Errorf("LookupAsset(%v) of an asset never stored = %+v, %v; want nil, nil", key, f, err)
		}
	}
}

// testFileTablesIncompatible: a tile or asset table of a name that another kind of table
// has is refused with a *store.IncompatibleTableError, and so is the other way round.
func testFileTablesIncompatible(t *testing.T, s store.Store) {
	ctx := t.Context()
	if err := s.EnsureFeatureTable(ctx, &store.FeatureTable{Name: "features", SRID: 4326,
		Columns: []store.Column{{Name: "z", Property: "z", Type: store.TypeText}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTileTable(ctx, &store.TileTable{Name: "tiles"}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureAssetTable(ctx, &store.AssetTable{Name: "assets"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		ensure func() error
	}{
		{name: "tiles into a feature table", ensure: func() error { return s.EnsureTileTable(ctx, &store.TileTable{Name: "features"}) }},
		{name: "assets into a feature table", ensure: func() error { return s.EnsureAssetTable(ctx, &store.AssetTable{Name: "features"}) }},
		{name: "assets into a tile table", ensure: func() error { return s.EnsureAssetTable(ctx, &store.AssetTable{Name: "tiles"}) }},
		{name: "tiles into an asset table", ensure: func() error { return s.EnsureTileTable(ctx, &store.TileTable{Name: "assets"}) }},
		{name: "features into a tile table", ensure: func() error {
			return s.EnsureFeatureTable(ctx, &store.FeatureTable{Name: "tiles", SRID: 4326})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ensure()
			var inc *store.IncompatibleTableError
			if !errors.As(err, &inc) || len(inc.Problems) == 0 {
				t.Errorf("got %v, want a *store.IncompatibleTableError naming its problems", err)
			}
		})
	}
}

// testTaskExtent: TaskExtent is the extent of the units that stored something in the
// latest run of the flow where the task is done; ok is false when there is none.
func testTaskExtent(t *testing.T, s store.Store) {
	ctx := t.Context()
	extent := func(flow, task string) (orb.Bound, bool) {
		t.Helper()
		b, ok, err := s.TaskExtent(ctx, flow, task)
		if err != nil {
			t.Fatalf("TaskExtent(%q, %q): %v", flow, task, err)
		}
		return b, ok
	}
	box := func(x0, y0, x1, y1 float64) *orb.Bound {
		return &orb.Bound{Min: orb.Point{x0, y0}, Max: orb.Point{x1, y1}}
	}
	ref := func(run *store.Run, task, key string) store.UnitRef {
		return store.UnitRef{RunID: run.ID, TaskID: task, Key: key}
	}
	setTask := func(run *store.Run, task string, st store.State) {
		t.Helper()
		if err := s.SetTaskState(ctx, run.ID, task, "wfs", st, ""); err != nil {
			t.Fatal(err)
		}
	}
	addBoxes := func(run *store.Run, task string, boxes map[string]*orb.Bound) {
		t.Helper()
		setTask(run, task, store.Running)
		var units []store.Unit
		for k, b := range boxes {
			units = append(units, store.Unit{Key: k, BBox: b})
		}
		if err := s.AddUnits(ctx, run.ID, task, units); err != nil {
			t.Fatal(err)
		}
	}

	if _, ok := extent("f", "t"); ok {
		t.Error("TaskExtent of a flow never run is ok")
	}
	r1 := startRun(t, s, store.RunStart{Flow: "f"})
	addBoxes(r1, "t", map[string]*orb.Bound{
		"k0": box(0.5, 0.25, 1, 1), "k1": box(1, 0, 2.5, 1), "k2": box(-50, -50, -40, -40), "k3": box(60, 60, 70, 70), "k4": nil,
	})
	completeUnit(t, s, ref(r1, "t", "k0"), store.Counts{Inserted: 1})
	completeUnit(t, s, ref(r1, "t", "k1"), store.Counts{Skipped: 3})
	completeUnit(t, s, ref(r1, "t", "k2"), store.Counts{Bytes: 100})  // stored nothing
	completeUnit(t, s, ref(r1, "t", "k4"), store.Counts{Inserted: 2}) // not spatial
	// k3 is never done.
	if _, ok := extent("f", "t"); ok {
		t.Error("TaskExtent of a task still running is ok")
	}
	setTask(r1, "t", store.Done)
	want1 := orb.Bound{Min: orb.Point{0.5, 0}, Max: orb.Point{2.5, 1}}
	if b, ok := extent("f", "t"); !ok || b != want1 {
		t.Errorf("TaskExtent = %v, %v; want %v, the units that stored something", b, ok, want1)
	}
	finishRun(t, s, r1, store.Done, "")

	// A later run where the task failed does not count.
	r2 := startRun(t, s, store.RunStart{Flow: "f"})
	addBoxes(r2, "t", map[string]*orb.Bound{"k0": box(100, 10, 101, 11)})
	completeUnit(t, s, ref(r2, "t", "k0"), store.Counts{Updated: 1})
	setTask(r2, "t", store.Failed)
	finishRun(t, s, r2, store.Failed, "")
	if b, ok := extent("f", "t"); !ok || b != want1 {
		t.Errorf("TaskExtent after a failed run = %v, %v; want the last done run's %v", b, ok, want1)
	}

	// A later run where it is done replaces it.
	r3 := startRun(t, s, store.RunStart{Flow: "f"})
	addBoxes(r3, "t", map[string]*orb.Bound{"k0": box(20.25, 20.5, 21.75, 21)})
	completeUnit(t, s, ref(r3, "t", "k0"), store.Counts{Updated: 1})
	setTask(r3, "t", store.Done)
	finishRun(t, s, r3, store.Done, "")
	if b, ok := extent("f", "t"); !ok || b != *box(20.25, 20.5, 21.75, 21) {
		t.Errorf("TaskExtent after a later run = %v, %v; want that run's %v", b, ok, *box(20.25, 20.5, 21.75, 21))
	}

	// Another flow's task of the same name that stored nothing: no extent.
	g := startRun(t, s, store.RunStart{Flow: "g"})
	addBoxes(g, "t", map[string]*orb.Bound{"k0": box(0, 0, 1, 1)})
	completeUnit(t, s, ref(g, "t", "k0"), store.Counts{})
	setTask(g, "t", store.Done)
	finishRun(t, s, g, store.Done, "")
	for _, c := range [][2]string{{"g", "t"}, {"f", "other"}, {"nope", "t"}} {
		if b, ok := extent(c[0], c[1]); ok {
			t.Errorf("TaskExtent(%q, %q) = %v, ok; want none", c[0], c[1], b)
		}
	}
}
