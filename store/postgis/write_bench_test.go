package postgis

import (
	"fmt"
	"math"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// BenchmarkWriteFeatures measures one unit's WriteFeatures of 2,000 building footprints
// (a 20-vertex ring and three properties each), rolled back so that every round writes
// into the same empty table, in each write mode: what a row costs the sink, the
// table's identity fid and its primary key included.
func BenchmarkWriteFeatures(b *testing.B) {
	fs := make([]*spatial.Feature, 2000)
	for i := range fs {
		r := make(orb.Ring, 0, 20)
		for j := range 19 {
			a := 2 * math.Pi * float64(j) / 19
			r = append(r, orb.Point{600000 + float64(i)*30 + 10*math.Cos(a), 5800000 + 10*math.Sin(a)})
		}
		fs[i] = &spatial.Feature{ID: fmt.Sprintf("b.%d", i), Geometry: orb.Polygon{append(r, r[0])},
			Properties: map[string]any{"name": fmt.Sprintf("house %d", i), "storeys": float64(i % 5), "id": int64(i)}}
	}
	cols := []store.Column{{Name: "name", Property: "name", Type: store.TypeText},
		{Name: "storeys", Property: "storeys", Type: store.TypeDouble}, {Name: "id", Property: "id", Type: store.TypeBigint}}
	for _, mode := range []struct {
		name  string
		table store.FeatureTable
	}{
		{"append", store.FeatureTable{Name: "append", SRID: 25832, Columns: cols}},
		{"upsert", store.FeatureTable{Name: "upsert", SRID: 25832, Columns: cols, Mode: store.ModeUpsert, Key: []string{"id"}}},
		{"mirror", store.FeatureTable{Name: "mirror", SRID: 25832, Columns: cols, Mode: store.ModeMirror}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := b.Context()
			s, err := Open(ctx, testdb.URL(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			table := mode.table
			if err := s.EnsureFeatureTable(ctx, &table); err != nil {
				b.Fatal(err)
			}
			run, err := s.StartRun(ctx, store.RunStart{Flow: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer run.Close()
			if err := s.SetTaskState(ctx, run.ID, "a", "fake", "running", ""); err != nil {
				b.Fatal(err)
			}
			if err := s.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: "u"}}); err != nil {
				b.Fatal(err)
			}
			ref := store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u"}
			b.ReportAllocs()
			for b.Loop() {
				tx, err := s.BeginUnit(ctx, ref)
				if err != nil {
					b.Fatal(err)
				}
				src := features(fs)
				c, err := tx.WriteFeatures(ctx, &table, &src)
				tx.Rollback(ctx)
				if err != nil || c.Inserted != int64(len(fs)) {
					b.Fatalf("%+v, %v; want %d inserted", c, err, len(fs))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(fs)), "µs/feature")
		})
	}
}
