package postgis

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// benchParcels is how many parcels BenchmarkVectorTile writes.
const benchParcels = 100_000

// parcelSource yields n parcels: 30 m squares on a 31.6 m grid of 10 km by 10 km around
// lon 11.5, lat 48.1 (Munich), each with a few attributes, starting at the i-th.
type parcelSource struct{ i, n int }

func (p *parcelSource) Next() (*spatial.Feature, error) {
	if p.n == 0 {
		return nil, io.EOF
	}
	p.n--
	i := p.i
	p.i++
	const side = 317                                                         // cells a side: 317^2 > 100,000
	const degLon, degLat = 10000.0 / 74_340 / side, 10000.0 / 111_320 / side // a cell, in degrees at lat 48.1
	x0, y0 := 11.5-degLon*side/2+degLon*float64(i%side), 48.1-degLat*side/2+degLat*float64(i/side)
	w, h := degLon*30/31.6, degLat*30/31.6
	ring := orb.Ring{{x0, y0}, {x0 + w, y0}, {x0 + w, y0 + h}, {x0, y0 + h}, {x0, y0}}
	return &spatial.Feature{ID: fmt.Sprintf("parcel.%d", i), Geometry: orb.Polygon{ring}, Properties: map[string]any{
		"name": fmt.Sprintf("Flurstück %d/%d", i/side, i%side), "area": 900.0 + float64(i%7),
		"number": float64(i), "use": []string{"residential", "commercial", "farmland", "forest"}[i%4],
	}}, nil
}

// benchStore writes benchParcels parcels through the store's write path (units of 2,000
// features) into public.parcels, indexed as a harvest's end indexes it, and returns the
// table as StoredTable describes it.
func benchStore(b *testing.B) (*Store, store.StoredTable) {
	ctx := context.Background()
	s, err := Open(ctx, testdb.URL(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	table := &store.FeatureTable{Name: "parcels", SRID: 4326, Columns: []store.Column{
		{Name: "name", Property: "name", Type: store.TypeText}, {Name: "area", Property: "area", Type: store.TypeDouble},
		{Name: "number", Property: "number", Type: store.TypeBigint}, {Name: "use", Property: "use", Type: store.TypeText}}}
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		b.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer run.Close()
	const unit = 2000
	units := make([]store.Unit, benchParcels/unit)
	for i := range units {
		units[i] = store.Unit{Key: fmt.Sprintf("u%03d", i)}
	}
	if err := s.SetTaskState(ctx, run.ID, "a", "bench", store.Running, ""); err != nil {
		b.Fatal(err)
	}
	if err := s.AddUnits(ctx, run.ID, "a", units); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i, u := range units {
		tx, err := s.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: u.Key})
		if err != nil {
			b.Fatal(err)
		}
		c, err := tx.WriteFeatures(ctx, table, &parcelSource{i: i * unit, n: unit})
		if err == nil {
			err = tx.Complete(ctx, c, nil, nil, time.Now())
		}
		if err == nil {
			err = tx.Commit(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d parcels in %v", benchParcels, time.Since(start).Round(time.Millisecond))
	st, err := s.StoredTable(ctx, "", "parcels")
	if err != nil {
		b.Fatal(err)
	}
	return s, st
}

// BenchmarkVectorTile draws tiles of 100,000 parcels: 200 z14 tiles inside the extent,
// and the z12 and z10 tiles over it, reporting each level's p50 and p95 in ms; and times
// StoredTable, which each tile request's ETag needs. -v logs the tiles' sizes.
func BenchmarkVectorTile(b *testing.B) {
	s, st := benchStore(b)
	b.Logf("StoredTable: %d rows, extent %v", st.Rows, *st.Extent)
	for _, z := range []int{14, 12, 10} {
		tiles := tilesIn(*st.Extent, z)
		n := len(tiles)
		if z == 14 {
			n = 200
		}
		b.Run(fmt.Sprintf("z%d", z), func(b *testing.B) {
			for range b.N {
				benchTiles(b, s, st, tiles, n)
			}
		})
	}
	// StoredTable of an unchanged table (its version kept, its counts cached), and the
	// scan a changed one costs once (every time for a table whose version is not kept).
	b.Run("StoredTable", func(b *testing.B) {
		for range b.N {
			benchCalls(b, 50, func() error { _, err := s.StoredTable(b.Context(), "", st.Name); return err })
		}
	})
	b.Run("scanTable", func(b *testing.B) {
		for range b.N {
			benchCalls(b, 20, func() error { t := st; _, _, err := s.scanTable(b.Context(), &t, false); return err })
		}
	})
}

// benchCalls times n calls of fn and reports their p50 and p95.
func benchCalls(b *testing.B, n int, fn func() error) {
	times := make([]float64, n)
	for i := range times {
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		times[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	slices.Sort(times)
	b.ReportMetric(times[n/2], "p50-ms")
	b.ReportMetric(times[n*95/100], "p95-ms")
}

// tilesIn lists the tiles of zoom z inside extent.
func tilesIn(extent orb.Bound, z int) []maptile.Tile {
	lo := maptile.At(orb.Point{extent.Min[0], extent.Max[1]}, maptile.Zoom(z))
	hi := maptile.At(orb.Point{extent.Max[0], extent.Min[1]}, maptile.Zoom(z))
	var out []maptile.Tile
	for x := lo.X; x <= hi.X; x++ {
		for y := lo.Y; y <= hi.Y; y++ {
			out = append(out, maptile.New(x, y, maptile.Zoom(z)))
		}
	}
	return out
}

// benchTiles draws n tiles, picked at random from tiles, and reports their p50 and p95.
func benchTiles(b *testing.B, s *Store, st store.StoredTable, tiles []maptile.Tile, n int) {
	rnd := rand.New(rand.NewPCG(1, 2))
	times := make([]float64, 0, n)
	var bytes, features, thinned int
	for i := range n {
		tl := tiles[i%len(tiles)]
		if n > len(tiles) {
			tl = tiles[rnd.IntN(len(tiles))]
		}
		start := time.Now()
		vt, err := s.VectorTile(b.Context(), st, store.TileQuery{Z: int(tl.Z), X: int(tl.X), Y: int(tl.Y)})
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
		bytes, features = bytes+len(vt.Data), features+vt.Features
		if vt.Thinned {
			thinned++
		}
	}
	slices.Sort(times)
	pct := func(p float64) float64 { return times[int(math.Ceil(p*float64(len(times))))-1] }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(times[len(times)-1], "max-ms")
	b.Logf("%d tiles: p50 %.1f ms, p95 %.1f ms, max %.1f ms; %.0f features and %.0f bytes a tile on average; %d thinned",
		n, pct(0.5), pct(0.95), times[len(times)-1], float64(features)/float64(n), float64(bytes)/float64(n), thinned)
}
