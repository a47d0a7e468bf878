package geojsonseq

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// features yields fs, then err (io.EOF when nil).
type features struct {
	fs  []*spatial.Feature
	err error
}

func (s *features) Next() (*spatial.Feature, error) {
	if len(s.fs) == 0 {
		return nil, cmpErr(s.err)
	}
	f := s.fs[0]
	s.fs = s.fs[1:]
	return f, nil
}

func cmpErr(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}

var layer = Layer{Columns: []store.Column{
	{Name: "name", Type: store.TypeText},
	{Name: "n", Property: "N", Type: store.TypeBigint},
	{Name: "price", Type: store.TypeNumeric},
	{Name: "ok", Type: store.TypeBoolean},
	{Name: "attrs", Type: store.TypeJSONB},
}}

func sample() []*spatial.Feature {
	return []*spatial.Feature{
		{ID: "a.1", Geometry: orb.Point{11.5, 48.1}, Properties: map[string]any{
			"name": "one", "N": float64(3), "price": "10.50", "ok": "true", "attrs": `{"k":[1,2]}`, "other": "left out"}},
		{Geometry: orb.LineString{{1, 2}, {3, 4}}, Properties: map[string]any{"N": int64(-2)}},
		{ID: "a.3"},
	}
}

// TestWrite: each record as the form asks, the columns in order, missing ones null,
// the id when there is one, and nothing else.
func TestWrite(t *testing.T) {
	want := []string{
		`{"type":"Feature","id":"a.1","geometry":{"type":"Point","coordinates":[11.5,48.1]},"properties":{"name":"one","n":3,"price":10.50,"ok":true,"attrs":{"k":[1,2]}}}`,
		`{"type":"Feature","geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]},"properties":{"name":null,"n":-2,"price":null,"ok":null,"attrs":null}}`,
		`{"type":"Feature","id":"a.3","geometry":null,"properties":{"name":null,"n":null,"price":null,"ok":null,"attrs":null}}`,
	}
	tests := []struct {
		name, file string
		prefix     string
	}{
		{name: "RFC 8142", file: "out.geojsons", prefix: "\x1e"},
		{name: "newline-delimited", file: "out.geojsonl", prefix: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			n, err := Write(context.Background(), path, layer, &features{fs: sample()}, &Options{RS: RSFor(path)})
			if err != nil || n != 3 {
				t.Fatalf("Write = %d, %v; want 3", n, err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, w := range want {
				lines = append(lines, tt.prefix+w+"\n")
			}
			if got := string(b); got != strings.Join(lines, "") {
				t.Errorf("wrote\n%q\nwant\n%q", got, strings.Join(lines, ""))
			}
		})
	}
}

// TestWriteAtomic: a source failing part way, or a value that does not fit, leaves the
// file there as it was and no temporary file; no features make an empty file.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.geojsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	bad := []*spatial.Feature{{ID: "x", Properties: map[string]any{"N": "many"}}}
	for name, src := range map[string]store.FeatureSource{
		"a failing source": &features{fs: sample(), err: boom},
		"a bad value":      &features{fs: bad},
	} {
		if _, err := Write(context.Background(), path, layer, src, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Errorf("the file is now %q, want it as it was", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left behind %q", left)
	}
	n, err := Write(context.Background(), path, layer, &features{}, nil)
	fi, serr := os.Stat(path)
	if err != nil || n != 0 || serr != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o640 {
		t.Errorf("an empty sequence: %d, %v; the file %v (%v); want an empty file keeping its mode 0640", n, err, fi, serr)
	}
}
