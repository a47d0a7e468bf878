package tasks_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// parcelProps are the ten properties of the sample WFS's parcels.
var parcelProps = []tasks.Property{
	{Name: "parcel_id", Type: store.TypeText}, {Name: "cadastre_no", Type: store.TypeBigint}, {Name: "area_m2", Type: store.TypeDouble},
	{Name: "zone", Type: store.TypeText}, {Name: "Land-Use", Type: store.TypeText}, {Name: "owner_count", Type: store.TypeBigint},
	{Name: "assessed_value", Type: store.TypeNumeric}, {Name: "is_public", Type: store.TypeBoolean}, {Name: "surveyed", Type: store.TypeDate},
	{Name: "updated_at", Type: store.TypeTimestamptz},
}

// loopStream yields the same features again and again.
type loopStream struct {
	fs []*spatial.Feature
	i  int
}

func (s *loopStream) Next() (*spatial.Feature, error) {
	f := s.fs[s.i%len(s.fs)]
	s.i++
	return f, nil
}

func (s *loopStream) Observe(*tasks.Evidence) *tasks.RejectedError { return nil }

// BenchmarkTransform is what a transform costs per feature a stream yields (ns/op is
// per feature read from the stream, kept or not), on parcels of ten properties and a
// 20-vertex polygon each, half of them residential: the stream alone, then with where,
// with promote_to_multi (which hashes the feature as received, a hash the store then
// does not compute), and Plan, once per task, which lays out the columns.
func BenchmarkTransform(b *testing.B) {
	fs := make([]*spatial.Feature, 64)
	for i := range fs {
		r := make(orb.Ring, 0, 20)
		for j := range 19 {
			r = append(r, orb.Point{11.5 + float64(i)*1e-3 + 1e-4*float64(j%3), 48.1 + 1e-4*float64(j)})
		}
		r = append(r, r[0])
		fs[i] = &spatial.Feature{ID: fmt.Sprint("p.", i), Geometry: orb.Polygon{r}, Properties: map[string]any{
			"parcel_id": fmt.Sprint("P-", i), "cadastre_no": float64(100000 + i), "area_m2": float64(200 + 37*i),
			"zone": "Wohngebiet", "Land-Use": []string{"residential", "forest"}[i%2], "owner_count": float64(i % 4),
			"assessed_value": "250000.00", "is_public": "false", "surveyed": "2001-02-03", "updated_at": "2020-05-06T07:08:09Z"}}
	}
	for _, bc := range []struct {
		name string
		tr   tasks.Transform
	}{
		{"none", tasks.Transform{}},
		{"where", tasks.Transform{Where: `"Land-Use" = 'residential' AND area_m2 > 500`}},
		{"where_in_like_date", tasks.Transform{Where: `zone LIKE 'Wohn%' AND "Land-Use" IN ('residential', 'mixed') OR surveyed < DATE('2000-01-01')`}},
		{"columns_where_promote", tasks.Transform{Columns: tasks.ColumnMap{{Name: "parcel", Property: "parcel_id"}, {Name: "value", Property: "assessed_value"}},
			Where: `"Land-Use" = 'residential'`, Geometry: tasks.PromoteToMulti}},
	} {
		_, x, err := bc.tr.Plan("parcels", parcelProps)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			area := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
			s := x.Stream(&loopStream{fs: fs}, area, area)
			b.ReportAllocs()
			for b.Loop() {
				f, err := s.Next()
				if err != nil && err != io.EOF {
					b.Fatal(err)
				}
				f.Hash = nil // promote anew each round
				if p, ok := f.Geometry.(orb.MultiPolygon); ok {
					f.Geometry = p[0]
				}
			}
		})
	}
	b.Run("plan_columns", func(b *testing.B) {
		tr := tasks.Transform{Columns: tasks.ColumnMap{{Name: "parcel", Property: "parcel_id"}, {Name: "zoning", Property: "zone"},
			{Name: "value", Property: "assessed_value"}}}
		for b.Loop() {
			if _, _, err := tr.Plan("parcels", parcelProps); err != nil {
				b.Fatal(err)
			}
		}
	})
}
