package cli

import (
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/tasks"
)

// TestWrapInto: text wraps at words within 80 columns, continuation lines indented as
// deep as the prefix, a word longer than a line cut, characters counted, not bytes.
func TestWrapInto(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name, prefix, text, want string
	}{
		{name: "fits", prefix: "title     ", text: "Parcels", want: "title     Parcels\n"},
		{name: "wraps at words", prefix: "ab ", text: strings.Repeat("word ", 20),
			want: "ab " + strings.TrimSpace(strings.Repeat("word ", 15)) + "\n   " + strings.TrimSpace(strings.Repeat("word ", 5)) + "\n"},
		{name: "cuts a long word", prefix: "url ", text: long, want: "url " + long[:76] + "\n    " + long[76:] + "\n"},
		{name: "umlauts are one column", prefix: "", text: strings.Repeat("ü", 80), want: strings.Repeat("ü", 80) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			wrapInto(&b, tt.prefix, tt.text)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

// TestWriteServiceFits: long names, titles, URLs and notes stay within 80 columns.
func TestWriteServiceFits(t *testing.T) {
	ext := &orb.Bound{Min: orb.Point{-179.123456, -89.5}, Max: orb.Point{179.987654, 89.5}}
	long := strings.Repeat("Überlange Bezeichnung ", 8)
	s := &tasks.Service{Kind: "wfs", Protocol: "WFS 2.0.0", URL: "https://example.org/" + strings.Repeat("segment/", 15) + "wfs?map=" + strings.Repeat("m", 90),
		Title: long, Paging: "STARTINDEX and COUNT", MaxPage: 1000, Filters: []string{"BBOX", "FES 2.0"},
		RateLimit: []tasks.Header{{Name: "RateLimit-Policy", Value: `"burst";q=100;w=60, "day";q=100000;w=86400`}},
		Notes:     []string{long + long},
		Layers: []tasks.Layer{
			{Name: "namespace:" + strings.Repeat("very_long_layer_name_", 4), Title: long, Count: 123456789012, Extent: ext,
				Fields: []tasks.Field{{Name: strings.Repeat("field_", 12), Type: "string"}}, CRSs: []string{"urn:ogc:def:crs:EPSG::4326", "urn:ogc:def:crs:EPSG::3857"}},
			{Name: "b", Count: -1},
		},
	}
	var b strings.Builder
	writeService(&b, s, s.Layers[0].Name)
	for _, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > inspectWidth {
			t.Errorf("%d columns: %q", n, line)
		}
	}
	if !strings.Contains(b.String(), "123456789012") || !strings.Contains(b.String(), "field_") {
		t.Errorf("lost the count or the fields:\n%s", b.String())
	}
}
