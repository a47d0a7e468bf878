package harvest

import (
	"math"
	"testing"

	"github.com/paulmach/orb"
)

func TestGeometryBound(t *testing.T) {
	ring := orb.Ring{{11.5, 48.1}, {11.6, 48.1}, {11.6, 48.2}, {11.45, 48.25}, {11.5, 48.1}}
	far := orb.Ring{{-3, 200}, {-2, 200}, {-2, 201}, {-3, 200}}
	nan := orb.Ring{{1, 1}, {math.NaN(), 2}, {2, 2}, {1, 1}}
	inf := orb.Ring{{1, 1}, {math.Inf(1), 2}, {2, math.Inf(-1)}, {1, 1}}
	tests := []struct {
		name string
		g    orb.Geometry
	}{
		{"polygon", orb.Polygon{ring}},
		{"polygon with a hole", orb.Polygon{ring, orb.Ring{{11.55, 48.15}, {11.56, 48.15}, {11.56, 48.16}, {11.55, 48.15}}}},
		{"infinities", orb.Polygon{inf}},
		{"multipolygon", orb.MultiPolygon{{ring}, {far}}},
		{"multipolygon, far part first", orb.MultiPolygon{{far}, {ring}}},
		{"NaN", orb.Polygon{nan}},
		{"NaN in a later part", orb.MultiPolygon{{ring}, {nan}}},
		{"empty polygon", orb.Polygon{}},
		{"empty ring", orb.Polygon{orb.Ring{}}},
		{"empty part", orb.MultiPolygon{{ring}, {}}},
		{"empty first part", orb.MultiPolygon{{orb.Ring{}}, {ring}}},
		{"empty multipolygon", orb.MultiPolygon{}},
		{"point", orb.Point{11.5, 48.1}},
		{"line", orb.LineString{{1, 2}, {3, -4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := geometryBound(tt.g), tt.g.Bound()
			if FormatBound(got) != FormatBound(want) {
				t.Errorf("geometryBound = %v, orb's Bound = %v", got, want)
			}
		})
	}
}
