package gpkg

import (
	"errors"
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/store"
)

// TestReadCRS: the CRSs a GeoPackage store reads a table's geometries in.
func TestReadCRS(t *testing.T) {
	p := orb.Point{11.5, 48.1}
	merc := project.WGS84.ToMercator(p)
	tests := []struct {
		name        string
		table, want int
		in, out     orb.Point
		err         error
	}{
		{name: "lon/lat as lon/lat", table: 4326, want: 0, in: p, out: p},
		{name: "unknown as lon/lat", table: 0, want: 0, in: p, out: p},
		{name: "lon/lat as 4326", table: 4326, want: 4326, in: p, out: p},
		{name: "Mercator as lon/lat", table: 3857, want: 0, in: merc, out: p},
		{name: "Mercator as 4326", table: 900913, want: 4326, in: merc, out: p},
		{name: "Mercator as stored", table: 3857, want: 3857, in: merc, out: merc},
		{name: "lon/lat as Mercator", table: 4326, want: 3857, in: p, out: merc},
		{name: "UTM as stored", table: 25832, want: 25832, in: orb.Point{690000, 5330000}, out: orb.Point{690000, 5330000}},
		{name: "UTM as lon/lat", table: 25832, want: 0, in: orb.Point{686121.7558, 5330438.1301}, out: p},
		{name: "lon/lat as UTM", table: 4326, want: 25832, in: p, out: orb.Point{686121.7558, 5330438.1301}},
		{name: "UTM as another zone", table: 25832, want: 25833, in: orb.Point{686121.7558, 5330438.1301}, out: orb.Point{239438.0793, 5333341.9477}},
		{name: "a CRS spatial/proj lacks", table: 27700, want: 0, err: store.ErrNoTransform},
		{name: "unknown as 4326", table: 0, want: 4326, err: store.ErrNoTransform},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv, err := readCRS(tt.table, tt.want)
			if !errors.Is(err, tt.err) || (tt.err != nil) != (err != nil) {
				t.Fatalf("readCRS(%d, %d) = %v, want %v", tt.table, tt.want, err, tt.err)
			}
			if err != nil {
				return
			}
			got := orb.Geometry(tt.in)
			if conv != nil {
				if got, err = conv(got); err != nil {
					t.Fatal(err)
				}
			}
			tol := 1e-6
			if tt.out[0] > 360 {
				tol = 1e-3 // metres, where the expected values are given to 0.1 mm
			}
			if g := got.(orb.Point); math.Abs(g[0]-tt.out[0]) > tol || math.Abs(g[1]-tt.out[1]) > tol {
				t.Errorf("readCRS(%d, %d) makes %v %v, want %v", tt.table, tt.want, tt.in, g, tt.out)
			}
		})
	}
}
