package gpkg_test

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/maptile/tilecover"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// benchParcels writes n parcels, squares of 30 m on a grid over about 10 km by 10 km
// around lon 11.5 lat 48.1, with four attributes, through the store's normal write path:
// units of 500 features, then FinishFeatureTable. It returns the store and the table.
func benchParcels(b *testing.B, n int) (*gpkg.Store, store.StoredTable) {
	b.Helper()
	ctx := b.Context()
	st, err := gpkg.Open(ctx, filepath.Join(b.TempDir(), "parcels.gpkg"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	table := &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: []store.Column{
		{Name: "name", Property: "name", Type: store.TypeText}, {Name: "use", Property: "use", Type: store.TypeText},
		{Name: "area", Property: "area", Type: store.TypeDouble}, {Name: "storeys", Property: "storeys", Type: store.TypeBigint}}}
	if err := st.EnsureFeatureTable(ctx, table); err != nil {
		b.Fatal(err)
	}
	side := int(math.Ceil(math.Sqrt(float64(n))))
	const dLat = 10.0 / 111.2                            // 10 km north to south
	dLon := 10.0 / (111.32 * math.Cos(48.1*math.Pi/180)) // and west to east
	step, size := orb.Point{dLon / float64(side), dLat / float64(side)}, orb.Point{dLon * 0.03 / 10, dLat * 0.03 / 10}
	uses := []string{"residential", "commercial", "garden", "road", "agriculture"}
	run, err := st.StartRun(ctx, store.RunStart{Flow: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	const perUnit = 500
	units := make([]store.Unit, (n+perUnit-1)/perUnit)
	for i := range units {
		units[i] = store.Unit{Key: fmt.Sprintf("u%04d", i)}
	}
	if err := st.AddUnits(ctx, run.ID, "a", units); err != nil {
		b.Fatal(err)
	}
	for u := range units {
		var fs featureSlice
		for i := u * perUnit; i < min(n, (u+1)*perUnit); i++ {
			x, y := 11.5-dLon/2+float64(i%side)*step[0], 48.1-dLat/2+float64(i/side)*step[1]
			fs = append(fs, &spatial.Feature{ID: fmt.Sprint("parcel.", i), Geometry: orb.Polygon{{{x, y}, {x + size[0], y},
				{x + size[0], y + size[1]}, {x, y + size[1]}, {x, y}}}, Properties: map[string]any{
				"name": fmt.Sprintf("Flurstück %d/%d", i/100, i%100), "use": uses[i%len(uses)], "area": 900 + float64(i%50), "storeys": int64(i % 4)}})
		}
		tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: units[u].Key})
		if err != nil {
			b.Fatal(err)
		}
		c, err := tx.WriteFeatures(ctx, table, &fs)
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.FinishFeatureTable(ctx, table); err != nil {
		b.Fatal(err)
	}
	stored, err := st.StoredTable(ctx, "", "parcels")
	if err != nil || stored.Rows != int64(n) {
		b.Fatalf("StoredTable: %d rows, %v; want %d", stored.Rows, err, n)
	}
	return st, stored
}

// BenchmarkVectorTile draws tiles of 100,000 parcels (benchParcels): 200 z14 tiles,
// cycling through every z14 tile inside the parcels' extent (there are 6 by 6 of them),
// then every z12 tile and the z10 tile over it, and reports each level's latency
// percentiles, features and bytes per tile. StoredTable, what a tile request reads
// first for its ETag, is timed too, with its counts kept and measured afresh.
func BenchmarkVectorTile(b *testing.B) {
	st, table := benchParcels(b, 100000)
	ctx := b.Context()
	inside := func(z maptile.Zoom) []maptile.Tile {
		var out []maptile.Tile
		for tile := range tilecover.Bound(*table.Extent, z) {
			if tb := tile.Bound(); table.Extent.Contains(tb.Min) && table.Extent.Contains(tb.Max) || z < 14 {
				out = append(out, tile)
			}
		}
		slices.SortFunc(out, func(a, c maptile.Tile) int { return cmp.Compare(a.Quadkey(), c.Quadkey()) })
		return out
	}
	levels := []struct {
		name  string
		tiles []maptile.Tile
		draws int
	}{
		{name: "z14", tiles: inside(14), draws: 200},
		{name: "z12", tiles: inside(12)},
		{name: "z10", tiles: inside(10)},
	}
	for _, lv := range levels {
		b.Run(lv.name, func(b *testing.B) {
			draws := max(lv.draws, len(lv.tiles))
			var took []time.Duration
			var features, bytes, thinned int
			for b.Loop() {
				for i := range draws {
					tile := lv.tiles[i%len(lv.tiles)]
					start := time.Now()
					vt, err := st.VectorTile(ctx, table, store.TileQuery{Z: int(tile.Z), X: int(tile.X), Y: int(tile.Y)})
					took = append(took, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
					features, bytes = features+vt.Features, bytes+len(vt.Data)
					if vt.Thinned {
						thinned++
					}
				}
			}
			slices.Sort(took)
			pct := func(p float64) float64 {
				return float64(took[min(len(took)-1, int(p*float64(len(took))))]) / float64(time.Millisecond)
			}
			b.ReportMetric(pct(0.5), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(float64(took[len(took)-1])/float64(time.Millisecond), "max-ms")
			b.ReportMetric(float64(features)/float64(len(took)), "features/tile")
			b.ReportMetric(float64(bytes)/float64(len(took)), "bytes/tile")
			b.ReportMetric(float64(thinned)/float64(len(took)), "thinned/tile")
			b.ReportMetric(float64(len(lv.tiles)), "tiles")
		})
	}
	b.Run("StoredTable", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.StoredTable(ctx, "", "parcels"); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The first StoredTable of a store just opened counts the rows and measures the
	// extent, as one after a write does, on a connection whose cache is cold.
	b.Run("StoredTableFresh", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fresh, err := gpkg.Open(ctx, st.Path(), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			_, err = fresh.StoredTable(ctx, "", "parcels")
			b.StopTimer()
			fresh.Close()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}
