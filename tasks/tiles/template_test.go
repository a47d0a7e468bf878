package tiles

import (
	"errors"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/tasks/internal/files"
)

func TestTemplate(t *testing.T) {
	tests := []struct {
		name, tpl string
		tms       bool
		z, x, y   int
		want      string
	}{
		{"xyz", "https://t.example.org/{z}/{x}/{y}.png", false, 3, 2, 1, "https://t.example.org/3/2/1.png"},
		{"tms scheme flips y", "https://t.example.org/{z}/{x}/{y}.png", true, 3, 2, 1, "https://t.example.org/3/2/6.png"},
		{"-y is the tms row", "https://t.example.org/{z}/{x}/{-y}.png", false, 3, 2, 1, "https://t.example.org/3/2/6.png"},
		{"quadkey", "https://t.example.org/a{quadkey}.jpeg?g=1", false, 3, 3, 5, "https://t.example.org/a213.jpeg?g=1"},
		{"wmts kvp", "https://w.example.org/wmts?SERVICE=WMTS&REQUEST=GetTile&LAYER=osm&TILEMATRIXSET=WebMercatorQuad&TILEMATRIX={TileMatrix}&TILEROW={TileRow}&TILECOL={TileCol}&FORMAT=image/png",
			false, 5, 17, 11, "https://w.example.org/wmts?SERVICE=WMTS&REQUEST=GetTile&LAYER=osm&TILEMATRIXSET=WebMercatorQuad&TILEMATRIX=5&TILEROW=11&TILECOL=17&FORMAT=image/png"},
		{"wmts rest", "https://w.example.org/wmts/osm/default/EPSG3857/{TileMatrix}/{TileRow}/{TileCol}.png", false, 5, 17, 11,
			"https://w.example.org/wmts/osm/default/EPSG3857/5/11/17.png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := ParseTemplate(tt.tpl, tt.tms)
			if err != nil {
				t.Fatal(err)
			}
			if got := tp.Expand(tt.z, tt.x, tt.y); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "https://t.example.org/{z}/{x}.png", "https://t.example.org/{z}/{x}/{y", "https://t.example.org/{z}/{x}/y}",
		"ftp://t.example.org/{z}/{x}/{y}", "/{z}/{x}/{y}.png", "https://t.example.org/{z}/{x}/{s}/{y}"} {
		if _, err := ParseTemplate(bad, false); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseTemplate(f *testing.F) {
	f.Add("https://t.example.org/{z}/{x}/{y}.png", false)
	f.Add("https://t.example.org/{z}/{x}/{-y}.png", true)
	f.Add("https://t.example.org/{quadkey}", false)
	f.Add("https://w.example.org/wmts?TILEMATRIX={TileMatrix}&TILEROW={TileRow}&TILECOL={TileCol}", false)
	f.Add("https://t.example.org/{z}/{x}/{y", false)
	f.Fuzz(func(t *testing.T, s string, tms bool) {
		tp, err := ParseTemplate(s, tms)
		if err != nil {
			return
		}
		for _, c := range [][3]int{{0, 0, 0}, {5, 31, 0}, {24, 1 << 23, 1<<24 - 1}} {
			u := tp.Expand(c[0], c[1], c[2])
			if strings.ContainsAny(u, "{}") && !strings.ContainsAny(s, "{}") {
				t.Fatalf("%q expanded to %q", s, u)
			}
		}
	})
}

func TestCheckImage(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tests := []struct {
		name, ct  string
		body      []byte
		want      string
		transient bool
	}{
		{"png", "image/png", png, files.FormatPNG, false},
		{"jpeg", "image/jpeg", []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F'}, files.FormatJPEG, false},
		{"webp", "image/webp", []byte("RIFF\x10\x00\x00\x00WEBPVP8 "), files.FormatWebP, false},
		{"octet-stream png", "application/octet-stream", png, files.FormatPNG, false},
		{"proxy page", "text/html", []byte("<html><head><title>502 Bad Gateway</title></head></html>"), "", true},
		{"portal page", "text/html; charset=utf-8", []byte("<html><body>Layer not found</body></html>"), "", false},
		{"html as image/png", "image/png", []byte("<html><body>Layer not found</body></html>"), "", false},
		{"png as text/html", "text/html", png, "", false},
		{"empty", "image/png", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := files.CheckImage(tt.ct, tt.body)
			if got != tt.want {
				t.Errorf("format %q, want %q (err %v)", got, tt.want, err)
			}
			if tt.want == "" {
				var ni *files.NotImageError
				if !errors.As(err, &ni) {
					t.Fatalf("err %v, want a files.NotImageError", err)
				}
				if c := retry.ClassOf(err); c != dlq.ClassParse {
					t.Errorf("class %s", c)
				}
			}
		})
	}
}

func TestTileMath(t *testing.T) {
	// Tile 16/34875/22743 holds Munich's Marienplatz (11.5755E, 48.1374N).
	b := tileBound(16, 34875, 22743)
	if !b.Contains(orb.Point{11.5755, 48.1374}) {
		t.Errorf("bound %v does not hold Marienplatz", b)
	}
	x0, x1, y0, y1 := tileRange(orb.Bound{Min: orb.Point{-180, -89}, Max: orb.Point{180, 89}}, 2)
	if x0 != 0 || x1 != 3 || y0 != 0 || y1 != 3 {
		t.Errorf("world range at z2: %d-%d, %d-%d", x0, x1, y0, y1)
	}
	if n := CountTiles(orb.Bound{Min: orb.Point{-180, -89}, Max: orb.Point{180, 89}}, 0, 3); n != 1+4+16+64 {
		t.Errorf("world tiles z0-3: %d", n)
	}
}
