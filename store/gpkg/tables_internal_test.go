package gpkg

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/paulmach/orb"
)

func TestResample(t *testing.T) {
	tests := []struct {
		name                                 string
		below, rows, maxFeatures, size, maxB int
		next                                 int
		again                                bool
	}{
		{name: "within both bounds", below: 65536, rows: 10, maxFeatures: 10, size: 100, maxB: 100, next: 65536},
		{name: "one row too many", below: 65536, rows: 11, maxFeatures: 10, size: 0, maxB: 100, next: 32768, again: true},
		{name: "one byte too many", below: 1000, rows: 1, maxFeatures: 10, size: 101, maxB: 100, next: 500, again: true},
		{name: "an odd threshold", below: 3, rows: 11, maxFeatures: 10, maxB: 100, next: 1, again: true},
		{name: "down to nothing", below: 1, rows: 11, maxFeatures: 10, maxB: 100, next: 0, again: true},
		{name: "nothing fits", below: 0, rows: 11, maxFeatures: 10, size: 200, maxB: 100, next: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, again := resample(tt.below, tt.rows, tt.maxFeatures, tt.size, tt.maxB)
			if next != tt.next || again != tt.again {
				t.Errorf("resample = %d, %v; want %d, %v", next, again, tt.next, tt.again)
			}
		})
	}
}

func TestStartBelow(t *testing.T) {
	tests := []struct {
		name        string
		expected    float64
		maxFeatures int
		want        int
	}{
		{name: "fewer than the limit", expected: 100, maxFeatures: 20000, want: 65536},
		{name: "just under the aim", expected: 19576, maxFeatures: 20000, want: 65536},
		{name: "five times the default", expected: 100000, maxFeatures: 20000, want: 65536 * 19576 / 100000},
		{name: "a small limit", expected: 250, maxFeatures: 50, want: 65536 * 29 / 250},
		{name: "a limit of one", expected: 10, maxFeatures: 1, want: 65536 / 10},
		{name: "no rows expected", expected: 0, maxFeatures: 1, want: 65536},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := startBelow(tt.expected, tt.maxFeatures); got != tt.want {
				t.Errorf("startBelow(%v, %d) = %d, want %d", tt.expected, tt.maxFeatures, got, tt.want)
			}
		})
	}
}

func TestImageType(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{name: "png", data: "\x89PNG\r\n\x1a\n\x00\x00", want: "image/png"},
		{name: "jpeg", data: "\xff\xd8\xff\xe0\x00\x10JFIF", want: "image/jpeg"},
		{name: "webp", data: "RIFF\x1a\x00\x00\x00WEBPVP8 ", want: "image/webp"},
		{name: "riff, not webp", data: "RIFF\x1a\x00\x00\x00WAVEfmt ", want: "application/octet-stream"},
		{name: "gif", data: "GIF89a\x01\x00", want: "image/gif"},
		{name: "empty", data: "", want: "application/octet-stream"},
		{name: "short", data: "\x89PN", want: "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := imageType([]byte(tt.data)); got != tt.want {
				t.Errorf("imageType = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionCond(t *testing.T) {
	tests := []struct {
		name    string
		history bool
		asOf    int64
		all     bool
		want    string
		args    []any
	}{
		{name: "no history", asOf: 3, want: "TRUE"},
		{name: "current", history: true, want: "t.gf_valid_to IS NULL"},
		{name: "as of a run", history: true, asOf: 3,
			want: "t.gf_run_id <= ? AND (t.gf_closed_run IS NULL OR t.gf_closed_run > ?)", args: []any{int64(3), int64(3)}},
		{name: "every version", history: true, asOf: 3, all: true, want: "TRUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, args := versionCond(tt.history, tt.asOf, tt.all)
			if got != tt.want || !slices.Equal(args, tt.args) {
				t.Errorf("versionCond = %q %v, want %q %v", got, args, tt.want, tt.args)
			}
		})
	}
}

func TestMeets(t *testing.T) {
	b := orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{10, 10}}
	ring := func(x0, y0, x1, y1 float64) orb.Ring {
		return orb.Ring{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}, {x0, y0}}
	}
	tests := []struct {
		name string
		g    orb.Geometry
		want bool
	}{
		{name: "point inside", g: orb.Point{5, 5}, want: true},
		{name: "point on the edge", g: orb.Point{10, 5}, want: true},
		{name: "point outside", g: orb.Point{11, 5}},
		{name: "multipoint, one inside", g: orb.MultiPoint{{20, 20}, {1, 1}}, want: true},
		{name: "multipoint around", g: orb.MultiPoint{{-1, -1}, {11, 11}}},
		{name: "line through, no vertex inside", g: orb.LineString{{-5, 5}, {15, 5}}, want: true},
		{name: "line past a corner", g: orb.LineString{{-5, 14}, {14, -5}}, want: true},
		{name: "line beside the corner, its box overlapping", g: orb.LineString{{5, 16}, {16, 5}}},
		{name: "multiline, the second crossing", g: orb.MultiLineString{{{20, 20}, {30, 30}}, {{5, -5}, {5, 15}}}, want: true},
		{name: "polygon around the box", g: orb.Polygon{ring(-5, -5, 15, 15)}, want: true},
		{name: "polygon with the box in its hole", g: orb.Polygon{ring(-5, -5, 15, 15), ring(-1, -1, 11, 11)}},
		{name: "polygon overlapping", g: orb.Polygon{ring(5, 5, 15, 15)}, want: true},
		{name: "L-shaped polygon around a corner", g: orb.Polygon{{{11, -5}, {20, -5}, {20, 20}, {-5, 20}, {-5, 11}, {11, 11}, {11, -5}}}},
		{name: "multipolygon, the second inside", g: orb.MultiPolygon{{ring(20, 20, 30, 30)}, {ring(1, 1, 2, 2)}}, want: true},
		{name: "collection", g: orb.Collection{orb.Point{20, 20}, orb.LineString{{-1, 5}, {1, 5}}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := meets(tt.g, b); got != tt.want {
				t.Errorf("meets = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSideLimits(t *testing.T) {
	box := rtreeEntry{minx: 0, maxx: 1024, miny: -8, maxy: 8}
	tests := []struct {
		name string
		side extentSide
		want []float64
	}{
		{name: "minx", side: extentSides[0], want: []float64{float64(math.Nextafter32(0, 1)), 1, 2, 4, 8, 16, 32, 64, 128, 256, 1024}},
		{name: "maxx", side: extentSides[1], want: []float64{float64(math.Nextafter32(1024, 0)), 1023, 1022, 1020, 1016, 1008, 992, 960, 896, 768, 0}},
		{name: "miny", side: extentSides[2], want: []float64{float64(math.Nextafter32(-8, 0)), -8 + 1.0/64, -8 + 2.0/64, -8 + 4.0/64,
			-8 + 8.0/64, -8 + 16.0/64, -8 + 32.0/64, -7, -6, -4, 8}},
		{name: "no height", side: extentSides[3], want: []float64{3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := box
			if tt.name == "no height" {
				b.miny, b.maxy = 3, 3
			}
			if got := sideLimits(tt.side, b); !slices.Equal(got, tt.want) {
				t.Errorf("sideLimits = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRootBox(t *testing.T) {
	cells := []rtreeEntry{{id: 7, minx: 1, maxx: 2, miny: 3, maxy: 4}, {id: 9, minx: -1, maxx: 0.5, miny: 3.5, maxy: 9}}
	node := nodeBlob(&rnode{number: 1, cells: cells}, 4+rtreeCell*rtreeMaxCells)
	got, ok, err := rootBox(node)
	if want := (rtreeEntry{minx: -1, maxx: 2, miny: 3, maxy: 9}); err != nil || !ok || got != want {
		t.Errorf("rootBox = %+v, %v, %v; want %+v", got, ok, err, want)
	}
	if _, ok, err := rootBox(nodeBlob(&rnode{number: 1}, 100)); ok || err != nil {
		t.Errorf("rootBox of an empty node: %v, %v", ok, err)
	}
	if _, _, err := rootBox(node[:30]); err == nil {
		t.Error("rootBox of a node cut short: no error")
	}
}

// TestMercatorToTile: a Web Mercator point lands in a tile where ProjectToTile puts it
// in lon/lat.
// TestTouch: touchSQL moves last_change to now, or past a last_change ahead of now.
func TestTouch(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.gpkg"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, before string
		after        func(got string) bool
	}{
		{name: "in the past", before: "2020-01-01T00:00:00.000Z", after: func(got string) bool { return got > "2025-" && got < "3000-" }},
		{name: "ahead of the clock", before: "2999-12-31T23:59:59.999Z", after: func(got string) bool { return got == "3000-01-01T00:00:00.000Z" }},
		{name: "not a time", before: "yesterday", after: func(got string) bool { return got > "2025-" && got < "3000-" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.w.ExecContext(ctx, `INSERT OR REPLACE INTO gpkg_contents (table_name, data_type, identifier, last_change)
				VALUES ('probe', 'attributes', 'probe', ?)`, tt.before); err != nil {
				t.Fatal(err)
			}
			if _, err := s.w.ExecContext(ctx, touchSQL, "probe"); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := s.w.QueryRowContext(ctx, `SELECT CAST(last_change AS TEXT) FROM gpkg_contents WHERE table_name = 'probe'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !tt.after(got) {
				t.Errorf("last_change %q became %q", tt.before, got)
			}
		})
	}
}
