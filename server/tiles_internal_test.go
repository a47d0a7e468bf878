package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/geoflow/geoflow/store"
)

func TestTileCoords(t *testing.T) {
	for _, tc := range []struct {
		name       string
		z, x, y    string
		wz, wx, wy int
		bad        bool
	}{
		{"mvt", "14", "8710", "5685.mvt", 14, 8710, 5685, false},
		{"png", "3", "4", "2.png", 3, 4, 2, false},
		{"bare", "0", "0", "0", 0, 0, 0, false},
		{"x past the level", "2", "4", "0", 0, 0, 0, true},
		{"negative", "2", "-1", "0", 0, 0, 0, true},
		{"too deep", "25", "0", "0", 0, 0, 0, true},
		{"words", "a", "0", "0", 0, 0, 0, true},
		{"two extensions", "1", "0", "0.mvt.gz", 0, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, x, y, err := tileCoords(tc.z, tc.x, tc.y)
			if (err != nil) != tc.bad {
				t.Fatalf("tileCoords(%s, %s, %s) = %v, want bad %v", tc.z, tc.x, tc.y, err, tc.bad)
			}
			if !tc.bad && (z != tc.wz || x != tc.wx || y != tc.wy) {
				t.Fatalf("tileCoords = %d/%d/%d, want %d/%d/%d", z, x, y, tc.wz, tc.wx, tc.wy)
			}
		})
	}
}

func TestSameTable(t *testing.T) {
	pg := func(schema, name string) store.StoredTable { return store.StoredTable{Schema: schema, Name: name} }
	for _, tc := range []struct {
		name   string
		target string
		t      store.StoredTable
		want   bool
	}{
		{"public by default", "parcels", pg("public", "parcels"), true},
		{"public spelled", "public.parcels", pg("public", "parcels"), true},
		{"other schema", "cad.parcels", pg("cad", "parcels"), true},
		{"other schema, other table", "cad.parcels", pg("public", "parcels"), false},
		{"geopackage", "public.parcels", pg("main", "parcels"), true},
		{"geopackage prefix", "cad.parcels", pg("main", "cad_parcels"), true},
		{"geopackage no prefix", "cad.parcels", pg("main", "parcels"), false},
		{"not a name", "a b", pg("public", "a b"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameTable(tc.target, tc.t); got != tc.want {
				t.Fatalf("sameTable(%q, %+v) = %v, want %v", tc.target, tc.t, got, tc.want)
			}
		})
	}
}

func TestParseTableRef(t *testing.T) {
	for _, tc := range []struct {
		ref, schema, name string
		bad               bool
	}{
		{"parcels", "", "parcels", false},
		{"cad.parcels", "cad", "parcels", false},
		{"x;drop", "", "", true},
		{"a.b.c", "", "", true},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			s, n, err := parseTableRef(tc.ref)
			if (err != nil) != tc.bad || s != tc.schema || n != tc.name {
				t.Fatalf("parseTableRef(%q) = %q, %q, %v", tc.ref, s, n, err)
			}
		})
	}
}

func TestCheckBasemap(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl, origin string
		bad                bool
	}{
		{"osm", "https://tile.openstreetmap.org/{z}/{x}/{y}.png", "https://tile.openstreetmap.org", false},
		{"port and key", "http://localhost:8081/t/{z}/{x}/{y}?key=abc", "http://localhost:8081", false},
		{"no y", "https://t.example/{z}/{x}.png", "", true},
		{"file", "file:///tiles/{z}/{x}/{y}.png", "", true},
		{"javascript", "javascript:alert(1)//{z}{x}{y}", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := checkBasemap(tc.tmpl)
			if (err != nil) != tc.bad || o != tc.origin {
				t.Fatalf("checkBasemap(%q) = %q, %v", tc.tmpl, o, err)
			}
		})
	}
}

func TestNotModified(t *testing.T) {
	tag := etag("stamp", 14, 1, 2)
	if tag == etag("stamp2", 14, 1, 2) || tag == etag("stamp", 14, 1, 3) {
		t.Fatal("the tag does not change with the stamp or the tile")
	}
	for _, tc := range []struct {
		name, header string
		want         bool
	}{
		{"none", "", false},
		{"same", tag, true},
		{"weak", "W/" + tag, true},
		{"in a list", `"x", ` + tag, true},
		{"other", `"x"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/vt/t/0/0/0.mvt", nil)
			if tc.header != "" {
				r.Header.Set("If-None-Match", tc.header)
			}
			w := httptest.NewRecorder()
			if got := notModified(w, r, tag); got != tc.want || (got && w.Code != http.StatusNotModified) || w.Header().Get("ETag") != tag {
				t.Fatalf("notModified = %v (%d, ETag %q), want %v", got, w.Code, w.Header().Get("ETag"), tc.want)
			}
		})
	}
}

func TestMaskable(t *testing.T) {
	for _, tc := range []struct {
		ctype, encoding string
		want            bool
	}{
		{"", "", true},
		{"text/html; charset=utf-8", "", true},
		{"application/json", "", true},
		{"application/geo+json", "", true},
		{"application/geo+json", "gzip", false},
		{"application/vnd.mapbox-vector-tile", "", false},
		{"application/geopackage+sqlite3", "", false},
		{"image/png", "", false},
	} {
		t.Run(tc.ctype+"/"+tc.encoding, func(t *testing.T) {
			h := http.Header{}
			if tc.ctype != "" {
				h.Set("Content-Type", tc.ctype)
			}
			if tc.encoding != "" {
				h.Set("Content-Encoding", tc.encoding)
			}
			if got := maskable(h); got != tc.want {
				t.Fatalf("maskable = %v, want %v", got, tc.want)
			}
		})
	}
}
