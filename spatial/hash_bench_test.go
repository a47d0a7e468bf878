package spatial

import (
	"math"
	"testing"

	"github.com/paulmach/orb"
)

// benchFeatures are features as a harvest carries them, one per geometry kind that
// dominates real layers: address points, building footprints (a 20-vertex ring), and
// parcels split into parts; each with a handful of typed properties.
func benchFeatures() map[string]*Feature {
	ring := make(orb.Ring, 0, 20)
	for i := range 19 {
		a := 2 * math.Pi * float64(i) / 19
		ring = append(ring, orb.Point{600000 + 10*math.Cos(a), 5800000 + 10*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	props := func() map[string]any {
		return map[string]any{
			"id": "DEBY0000000012345", "name": "Hauptstraße 12", "storeys": 3.0, "height": 11.75,
			"year": int64(1968), "listed": false, "use": nil,
			"source": map[string]any{"survey": "2019-04-01", "accuracy": 0.1},
		}
	}
	return map[string]*Feature{
		"point":        {ID: "a.1", Geometry: orb.Point{11.575, 48.137}, Properties: props()},
		"polygon":      {ID: "b.1", Geometry: orb.Polygon{ring}, Properties: props()},
		"multipolygon": {ID: "c.1", Geometry: orb.MultiPolygon{{ring}, {ring}, {ring}}, Properties: props()},
	}
}

// BenchmarkPayloadHash measures the hash every written feature costs, in both stores.
func BenchmarkPayloadHash(b *testing.B) {
	for _, name := range []string{"point", "polygon", "multipolygon"} {
		f := benchFeatures()[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				PayloadHash(f)
			}
		})
	}
}

// BenchmarkHasher measures what a store's Hasher costs for the same features, one after
// the other with the same names, as a page of a layer gives them.
func BenchmarkHasher(b *testing.B) {
	for _, name := range []string{"point", "polygon", "multipolygon"} {
		f := benchFeatures()[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var h Hasher
			for b.Loop() {
				h.Sum(f)
			}
		})
	}
}
