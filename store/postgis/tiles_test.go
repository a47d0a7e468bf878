package postgis

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

// TestTileAndAssetIndex: tables are created once with their keys and footprint indexes,
// rows upsert in a unit's transaction (inserted, then updated), lookups see them, an
// incompatible table is refused, and TaskExtent gives the extent of what a task stored.
func TestTileAndAssetIndex(t *testing.T) {
	ctx := context.Background()
	dbURL := testdb.URL(t)
	s, err := Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tt := &store.TileTable{Schema: "tiles x", Name: "Base-Map"} // quoted identifiers
	at := &store.AssetTable{Name: "scenes"}
	for range 2 {
		if err := s.EnsureTileTable(ctx, tt); err != nil {
			t.Fatal(err)
		}
		if err := s.EnsureAssetTable(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	idx := testdb.Int64(t, dbURL, `SELECT count(*) FROM pg_indexes WHERE tablename IN ('Base-Map', 'scenes')
		AND (indexdef LIKE '%gist (footprint)%' OR indexdef LIKE '%UNIQUE%')`)
	if idx != 4 {
		t.Errorf("%d key and footprint indexes, want 4", idx)
	}
	found, err := s.LookupTiles(ctx, tt, store.TileRange{Z: 1, X0: 2, Y0: 3, X1: 2, Y1: 3})
	if err != nil || len(found) != 0 {
		t.Fatalf("lookup before any row: %v %v", found, err)
	}
	run := startRun(t, s, "f", "basemap", 2)
	row := store.TileRow{Z: 1, X: 1, Y: 0, Footprint: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{180, 85}}, Status: store.FileOK,
		Path: "/t/1/1/0.png", Hash: make([]byte, 32), Bytes: 10, ContentType: "image/png", ETag: `"a"`}
	for i, want := range []store.Counts{{Inserted: 1, Bytes: 10}, {Updated: 1, Bytes: 10}} {
		ref := store.UnitRef{RunID: run, TaskID: "basemap", Key: []string{"u000", "u001"}[i]}
		res, err := commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
			return tx.UpsertTiles(ctx, tt, []store.TileRow{row})
		})
		if err != nil || res.Inserted != want.Inserted || res.Updated != want.Updated {
			t.Fatalf("upsert %d: %+v %v", i, res, err)
		}
		row.ETag = `"b"`
	}
	found, err = s.LookupTiles(ctx, tt, store.TileRange{Z: 1, X0: 1, Y0: 0, X1: 1, Y1: 0})
	f := found[[2]int{1, 0}]
	if err != nil || f == nil || f.ETag != `"b"` || f.Path != "/t/1/1/0.png" || f.Bytes != 10 || f.Status != store.FileOK {
		t.Fatalf("lookup: %+v %v", f, err)
	}
	ref := store.UnitRef{RunID: run, TaskID: "basemap", Key: "u001"}
	dt := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	_, err = commitUnit(ctx, s, ref, func(ctx context.Context, tx store.UnitTx) (store.Counts, error) {
		return tx.UpsertAsset(ctx, at, store.AssetRow{Collection: "c", Item: "i", Asset: "visual", Datetime: &dt,
			Footprint: orb.Polygon{{{0, 0}, {1, 0}, {1, 1}, {0, 0}}}, Properties: []byte(`{"gsd": 0.2}`), Path: "/a.tif", Bytes: 5})
	})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.LookupAsset(ctx, at, "c", "i", "visual"); err != nil || a == nil || a.Path != "/a.tif" {
		t.Fatalf("asset lookup: %+v %v", a, err)
	}
	if err := s.SetTaskState(ctx, run, "basemap", "tiles", "done", ""); err != nil {
		t.Fatal(err)
	}
	b, ok, err := s.TaskExtent(ctx, "f", "basemap")
	if err != nil || !ok || b.Min[0] != 0 || b.Max[0] != 2 {
		t.Errorf("TaskExtent = %v %v %v; want the boxes of the two units that stored something", b, ok, err)
	}
	if _, ok, err := s.TaskExtent(ctx, "f", "nothing"); ok || err != nil {
		t.Errorf("TaskExtent of an unknown task: %v %v", ok, err)
	}

	testdb.Rows(t, dbURL, `CREATE TABLE wrong (z text, x int)`)
	err = s.EnsureTileTable(ctx, &store.TileTable{Name: "wrong"})
	var inc *store.IncompatibleTableError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), `column "z" is text, not integer`) {
		t.Errorf("incompatible table: %v", err)
	}
}
