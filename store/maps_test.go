package store

import (
	"bytes"
	"math"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
)

func TestTileID(t *testing.T) {
	h := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}
	if got, want := TileID(h), uint64(0x010203040506); got != want {
		t.Fatalf("TileID = %#x, want %#x", got, want)
	}
	if got := TileID([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); got >= 1<<53 {
		t.Fatalf("TileID %d is not exact in a browser's numbers", got)
	}
	for _, tc := range []struct {
		name string
		hash []byte
		in   bool
	}{
		{"same prefix", h, true},
		{"prefix itself", h[:6], true},
		{"next prefix", []byte{1, 2, 3, 4, 5, 7}, false},
		{"previous", []byte{1, 2, 3, 4, 5, 5, 0xff}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := TileIDRange(TileID(h))
			in := bytes.Compare(tc.hash, lo) >= 0 && bytes.Compare(tc.hash, hi) < 0
			if in != tc.in {
				t.Fatalf("%x in [%x, %x) = %v, want %v", tc.hash, lo, hi, in, tc.in)
			}
		})
	}
	lo, hi := TileIDRange(1<<48 - 1)
	if full := bytes.Repeat([]byte{0xff}, 32); bytes.Compare(full, lo) < 0 || bytes.Compare(full, hi) >= 0 {
		t.Fatalf("the last id's range [%x, %x) misses %x", lo, hi, full)
	}
}

func TestSampleBelow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expected float64
		limit    int
		want     int
	}{
		{"fits", 100, 20000, 65536},
		{"exactly", 20000, 20000, 65536},
		{"twice", 40000, 20000, 32768},
		{"huge", 1e12, 20000, 1},
		{"no limit", 1e9, 0, 65536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SampleBelow(tc.expected, tc.limit); got != tc.want {
				t.Fatalf("SampleBelow(%g, %d) = %d, want %d", tc.expected, tc.limit, got, tc.want)
			}
		})
	}
}

func TestExpectedInTile(t *testing.T) {
	z14 := maptile.At(orb.Point{11.5, 48.1}, 14)
	tile := z14.Bound()
	// Four z14 tiles, the tile one of them.
	four := tile.Union(maptile.New(z14.X+1, z14.Y+1, 14).Bound())
	// A line from lat 40 to 50 across the tile: its share is the tile's height over the
	// line's, in Web Mercator.
	line := orb.Bound{Min: orb.Point{tile.Center()[0], 40}, Max: orb.Point{tile.Center()[0], 50}}
	share := (MercatorBound(tile).Max[1] - MercatorBound(tile).Min[1]) / (MercatorBound(line).Max[1] - MercatorBound(line).Min[1])
	tests := []struct {
		name   string
		rows   int64
		extent *orb.Bound
		want   float64
	}{
		{name: "no extent: every row", rows: 1000, want: 1000},
		{name: "the tile is the extent", rows: 1000, extent: &tile, want: 1000},
		{name: "a quarter of the extent", rows: 1000, extent: &four, want: 250},
		{name: "inside the tile", rows: 1000, extent: &orb.Bound{Min: tile.Center(), Max: orb.Point{tile.Center()[0] + 1e-4, tile.Center()[1] + 1e-4}}, want: 1000},
		{name: "beside the tile", rows: 1000, extent: &orb.Bound{Min: orb.Point{12, 48}, Max: orb.Point{13, 49}}, want: 0},
		{name: "a point in the tile", rows: 7, extent: &orb.Bound{Min: tile.Center(), Max: tile.Center()}, want: 7},
		{name: "a line across the tile", rows: 10, extent: &line, want: 10 * share},
		{name: "touching the tile", rows: 1000, extent: &orb.Bound{Min: orb.Point{tile.Max[0], tile.Min[1]}, Max: orb.Point{tile.Max[0] + 1, tile.Max[1]}}, want: 0},
		{name: "an empty table", rows: 0, extent: &tile, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpectedInTile(tt.rows, tt.extent, tile); math.Abs(got-tt.want) > 1e-6*tt.want+1e-9 {
				t.Errorf("ExpectedInTile = %v, want %v", got, tt.want)
			}
		})
	}
}
