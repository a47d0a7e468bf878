package mvt

import (
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"
)

func TestMercatorToTile(t *testing.T) {
	for _, p := range []orb.Point{{11.5, 48.1}, {-122.4, 37.8}, {0, 0}, {179.9, -84}} {
		for _, z := range []int{0, 7, 14, 20} {
			tile := maptile.At(p, maptile.Zoom(z))
			layer := &mvt.Layer{Extent: mvt.DefaultExtent, Features: []*geojson.Feature{geojson.NewFeature(p)}}
			layer.ProjectToTile(tile)
			want := layer.Features[0].Geometry.(orb.Point)
			if got := mercatorToTile(tile)(project.WGS84.ToMercator(p)); math.Abs(got[0]-want[0]) > 1 || math.Abs(got[1]-want[1]) > 1 {
				t.Errorf("%v at z%d: %v, ProjectToTile %v", p, z, got, want)
			}
		}
	}
}

// TestEncode: lon/lat and Web Mercator input give the same tile; a feature clipped away
// or smaller than a unit is dropped; ids and properties are kept.
func TestEncode(t *testing.T) {
	tile := maptile.At(orb.Point{11.5, 48.1}, 14)
	b := tile.Bound()
	inside := orb.Polygon{{{b.Min[0] + 0.001, b.Min[1] + 0.001}, {b.Min[0] + 0.003, b.Min[1] + 0.001}, {b.Min[0] + 0.003, b.Min[1] + 0.003}, {b.Min[0] + 0.001, b.Min[1] + 0.001}}}
	far := orb.Point{b.Max[0] + 1, b.Max[1] + 1}
	tiny := orb.LineString{{b.Min[0] + 0.005, b.Min[1] + 0.005}, {b.Min[0] + 0.005 + 1e-9, b.Min[1] + 0.005}}
	for _, tc := range []struct {
		name     string
		mercator bool
	}{{"lon/lat", false}, {"mercator", true}} {
		t.Run(tc.name, func(t *testing.T) {
			geom := func(g orb.Geometry) orb.Geometry {
				g = orb.Clone(g)
				if tc.mercator {
					return project.Geometry(g, project.WGS84.ToMercator)
				}
				return g
			}
			data, n, err := Encode("parcels", tile, tc.mercator, []Feature{
				{ID: 7, Geometry: geom(inside), Properties: map[string]any{"zone": "R1", "n": int64(3)}},
				{ID: 8, Geometry: geom(far), Properties: map[string]any{}},
				{ID: 9, Geometry: geom(tiny), Properties: map[string]any{}},
			})
			if err != nil || n != 1 {
				t.Fatalf("Encode = %d features, %v; want 1", n, err)
			}
			ls, err := mvt.Unmarshal(data)
			if err != nil || len(ls) != 1 || ls[0].Name != "parcels" || len(ls[0].Features) != 1 {
				t.Fatalf("decoded %v, %v", ls, err)
			}
			f := ls[0].Features[0]
			if id, _ := f.ID.(float64); id != 7 || f.Properties["zone"] != "R1" {
				t.Errorf("feature: id %v, properties %v", f.ID, f.Properties)
			}
		})
	}
	if data, n, err := Encode("x", tile, false, nil); data != nil || n != 0 || err != nil {
		t.Errorf("no features: %d bytes, %d, %v", len(data), n, err)
	}
}
