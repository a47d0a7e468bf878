package tiles

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paulmach/orb"
)

// TestMercatorLevels: a tile matrix set is fetchable as XYZ when it is Web Mercator and
// its matrices are numbered by zoom, with or without a shared prefix.
func TestMercatorLevels(t *testing.T) {
	set := func(crs string, ids ...string) *wmtsSet {
		s := &wmtsSet{CRS: crs}
		for _, id := range ids {
			s.Matrices = append(s.Matrices, struct {
				Identifier string `xml:"Identifier"`
			}{id})
		}
		return s
	}
	tests := []struct {
		name       string
		set        *wmtsSet
		limits     []string
		prefix     string
		zmin, zmax int
		ok         bool
	}{
		{name: "plain levels", set: set("urn:ogc:def:crs:EPSG:6.18.3:3857", "0", "1", "2"), zmax: 2, ok: true},
		{name: "geowebcache prefix", set: set("urn:ogc:def:crs:EPSG::900913", "EPSG:900913:0", "EPSG:900913:1"), prefix: "EPSG:900913:", zmax: 1, ok: true},
		{name: "limits narrow", set: set("EPSG:3857", "0", "1", "2", "3"), limits: []string{"2", "3"}, zmin: 2, zmax: 3, ok: true},
		{name: "not mercator", set: set("urn:ogc:def:crs:EPSG::25832", "0", "1")},
		{name: "names, not levels", set: set("EPSG:3857", "a", "b")},
		{name: "mixed prefixes", set: set("EPSG:3857", "x0", "y1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix, zmin, zmax, ok := mercatorLevels(tt.set, tt.limits)
			if ok != tt.ok || (ok && (prefix != tt.prefix || zmin != tt.zmin || zmax != tt.zmax)) {
				t.Fatalf("= %q %d-%d %v, want %q %d-%d %v", prefix, zmin, zmax, ok, tt.prefix, tt.zmin, tt.zmax, tt.ok)
			}
		})
	}
}

// TestSnippetZoom: a snippet goes as deep as about snippetTiles tiles allow, never above
// the first level nor below the last.
func TestSnippetZoom(t *testing.T) {
	munich := orb.Bound{Min: orb.Point{11.45, 48.05}, Max: orb.Point{11.55, 48.15}}
	tests := []struct {
		name        string
		ext         orb.Bound
		lo, hi, top int
	}{
		{name: "world", ext: world, lo: 0, hi: 20, top: 4},
		{name: "a city", ext: munich, lo: 0, hi: 20, top: 16},
		{name: "capped by the last level", ext: munich, lo: 0, hi: 12, top: 12},
		{name: "first level alone too big", ext: world, lo: 8, hi: 20, top: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := snippetZoom(tt.ext, tt.lo, tt.hi); got != tt.top {
				t.Fatalf("= %d, want %d", got, tt.top)
			}
		})
	}
}

// TestTileFindings: what a probed tile's answer says of the template.
func TestTileFindings(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n0000")
	tests := []struct {
		name      string
		missingOK bool
		status    int
		ct        string
		body      []byte
		want      string
	}{
		{name: "an image", status: 200, ct: "image/png", body: png},
		{name: "missing, accepted", missingOK: true, status: http.StatusNotFound},
		{name: "missing", status: http.StatusNotFound, want: "answered 404"},
		{name: "forbidden", missingOK: true, status: http.StatusForbidden, want: "HTTP 403"},
		{name: "html with 200", status: 200, ct: "text/html", body: []byte("<html><body>Layer not found</body></html>"), want: "tile 3/4/5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tileFindings(3, 4, 5, tt.missingOK, tt.status, tt.ct, tt.body)
			if (tt.want == "") != (len(fs) == 0) || (len(fs) > 0 && (fs[0].key != "url" || !strings.Contains(fs[0].msg, tt.want))) {
				t.Fatalf("= %+v, want %q", fs, tt.want)
			}
		})
	}
}
