package imagery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

func TestVerifiedHeld(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "a.tif")
	content := []byte("imagery")
	if err := os.WriteFile(final, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	checksum := "1220" + hex.EncodeToString(sum[:])
	other := "1220" + strings.Repeat("00", 32)
	held := &store.StoredFile{Path: final, Hash: sum[:], Bytes: int64(len(content)), ETag: `"e1"`}
	tests := []struct {
		name             string
		stored           *store.StoredFile
		final, checksum  string
		wantHolds, wantV bool
	}{
		{name: "nothing stored", final: final, checksum: checksum},
		{name: "held and verified", stored: held, final: final, checksum: checksum, wantHolds: true, wantV: true},
		{name: "held, no checksum to verify", stored: held, final: final, wantHolds: true},
		{name: "held, the item names other content", stored: held, final: final, checksum: other, wantHolds: true},
		{name: "held elsewhere", stored: held, final: filepath.Join(dir, "b.tif"), checksum: checksum},
		{name: "held file changed size", stored: &store.StoredFile{Path: final, Hash: sum[:], Bytes: 3}, final: final, checksum: checksum},
		{name: "held file gone", stored: &store.StoredFile{Path: filepath.Join(dir, "gone.tif"), Hash: sum[:], Bytes: 7},
			final: filepath.Join(dir, "gone.tif"), checksum: checksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holds(tt.stored, tt.final); got != tt.wantHolds {
				t.Errorf("holds = %v, want %v", got, tt.wantHolds)
			}
			if got := verifiedHeld(tt.stored, tt.final, tt.checksum); got != tt.wantV {
				t.Errorf("verifiedHeld = %v, want %v", got, tt.wantV)
			}
		})
	}
}

func TestAssetContentType(t *testing.T) {
	tests := []struct {
		name, response string
		resumed        bool
		item, want     string
	}{
		{name: "the response's", response: "image/tiff", item: "image/tiff; application=geotiff", want: "image/tiff"},
		{name: "none in the response", item: "image/jp2", want: "image/jp2"},
		{name: "a resumed part takes the item's", response: "application/octet-stream", resumed: true, item: "image/jp2", want: "image/jp2"},
		{name: "a resumed part without the item's", response: "application/octet-stream", resumed: true, want: "application/octet-stream"},
		{name: "neither", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := assetContentType(tt.response, tt.resumed, tt.item); got != tt.want {
				t.Errorf("assetContentType = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFootprint(t *testing.T) {
	box := orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}
	tests := []struct {
		name string
		geom string
		bbox *orb.Bound
		want string
	}{
		{name: "the item's geometry", geom: `{"type":"Point","coordinates":[5,6]}`, bbox: &box, want: "orb.Point"},
		{name: "the unit's box", geom: `null`, bbox: &box, want: "orb.Polygon"},
		{name: "neither", want: "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprintf("%T", footprint(json.RawMessage(tt.geom), tt.bbox)); got != tt.want {
				t.Errorf("footprint is a %s, want %s", got, tt.want)
			}
		})
	}
}

// problems records what Check reports, as "key: message".
type problems []string

func (p *problems) At(key, format string, args ...any) {
	*p = append(*p, key+": "+fmt.Sprintf(format, args...))
}

func TestConfigCheck(t *testing.T) {
	bbox := &[4]float64{5, 47, 6, 48}
	target := Target{Dir: "/tmp/x", Table: "imagery.scenes"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "wms", cfg: Config{WMS: &WMS{URL: "https://example.com/wms", Layers: "a", Resolution: 1}, BBox: bbox, Target: target}},
		{name: "stac", cfg: Config{STAC: &STAC{URL: "https://example.com/stac", Assets: []string{"visual"}}, BBoxFrom: "roads", Target: target}},
		{name: "neither source nor area nor target", cfg: Config{},
			want: []string{": give wms or stac", ": bbox or bbox_from is required", ": target.dir is required", ": target.table is required"}},
		{name: "both sources, both areas", cfg: Config{WMS: &WMS{}, STAC: &STAC{}, BBox: bbox, BBoxFrom: "roads", Target: target},
			want: []string{"stac: give wms or stac, not both", "bbox_from: give bbox or bbox_from, not both"}},
		{name: "a bad wms", cfg: Config{WMS: &WMS{URL: "ftp://x", Layers: " ", CRS: "EPSG:25832", MaxSize: -1}, BBox: bbox, Target: target},
			want: []string{`wms.url: "ftp://x" is not an http(s) URL`, "wms: wms.layers is required",
				`wms.crs: "EPSG:25832": only EPSG:3857 and EPSG:4326 are supported`,
				"wms: wms.resolution is required: the ground size of a pixel in the CRS's units", "wms.max_size: must not be negative"}},
		{name: "a bad stac", cfg: Config{STAC: &STAC{URL: "x", Limit: -1, Assets: []string{"", "a/b"}}, BBoxFrom: "Roads!", Target: Target{Dir: "d", Table: "a.b.c"}},
			want: []string{`stac.url: "x" is not an http(s) URL`, "stac.limit: must not be negative", `stac.assets: "" is not an asset key`,
				`stac.assets: "a/b" is not an asset key`, `bbox_from: "Roads!" is not a task id`, "target.table: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got problems
			tt.cfg.Check(&got)
			if len(got) != len(tt.want) {
				t.Fatalf("Check reported %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d is %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
