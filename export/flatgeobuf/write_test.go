package flatgeobuf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// testSource yields n features made by make, then io.EOF; fail, when not nil, is
// returned instead of the feature of that number (1-based) and every one after.
type testSource struct {
	n, i int
	make func(i int) *spatial.Feature
	fail func(i int) error
}

func (s *testSource) Next() (*spatial.Feature, error) {
	if s.i >= s.n {
		return nil, io.EOF
	}
	s.i++
	if s.fail != nil {
		if err := s.fail(s.i); err != nil {
			return nil, err
		}
	}
	return s.make(s.i), nil
}

func sliceSource(fs []*spatial.Feature) *testSource {
	return &testSource{n: len(fs), make: func(i int) *spatial.Feature { return fs[i-1] }}
}

// parcel is feature i of a grid of ~30 m squares around lon 11.5, lat 48.1, with four
// properties, as the GeoPackage export's tests and benchmark have them.
func parcel(i int) *spatial.Feature {
	x, y := 11.43+float64(i%316)*0.0004, 48.05+float64(i/316)*0.0003
	return &spatial.Feature{
		ID:       fmt.Sprintf("parcel.%d", i),
		Geometry: orb.Polygon{{{x, y}, {x + 0.0004, y}, {x + 0.0004, y + 0.00027}, {x, y + 0.00027}, {x, y}}},
		Properties: map[string]any{
			"name": fmt.Sprintf("parcel %d", i), "area": 900.5 + float64(i%7), "floors": float64(i % 5), "built": "2001-02-03",
		},
	}
}

var parcelColumns = []store.Column{
	{Name: "name", Type: store.TypeText},
	{Name: "area", Type: store.TypeDouble},
	{Name: "floors", Type: store.TypeBigint},
	{Name: "built", Type: store.TypeDate},
}

// fileSummary is what the test reads of a file: the header's fields that Write sets
// from its features, and the sizes of the features after the index.
type fileSummary struct {
	count    uint64
	nodeSize uint16
	typ      geometryType
	envelope []float64
	features []int // the size of each feature, its prefix included
}

// readSummary reads a file as a reader would: magic, header, the index skipped by its
// computed size, then the size-prefixed features to the end, which must come out even.
func readSummary(t *testing.T, path string) fileSummary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 || [8]byte(data[:8]) != magic {
		t.Fatalf("no magic bytes: % x", data[:min(len(data), 8)])
	}
	hl := int(binary.LittleEndian.Uint32(data[8:]))
	buf := data[12 : 12+hl]
	tab := flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
	field := func(slot int) flatbuffers.UOffsetT {
		return flatbuffers.UOffsetT(tab.Offset(flatbuffers.VOffsetT(4 + 2*slot)))
	}
	var s fileSummary
	s.nodeSize = 16
	if o := field(headerFeaturesCount); o != 0 {
		s.count = tab.GetUint64(o + tab.Pos)
	}
	if o := field(headerIndexNodeSize); o != 0 {
		s.nodeSize = tab.GetUint16(o + tab.Pos)
	}
	if o := field(headerGeometryType); o != 0 {
		s.typ = geometryType(tab.GetUint8(o + tab.Pos))
	}
	if o := field(headerEnvelope); o != 0 {
		at := tab.Vector(o)
		for i := 0; i < tab.VectorLen(o); i++ {
			s.envelope = append(s.envelope, tab.GetFloat64(at+flatbuffers.UOffsetT(8*i)))
		}
	}
	pos := 12 + hl
	if s.nodeSize > 0 {
		pos += int(treeSize(int(s.count), int(s.nodeSize)))
	}
	for pos < len(data) {
		n := 4 + int(binary.LittleEndian.Uint32(data[pos:]))
		s.features = append(s.features, n)
		pos += n
	}
	if pos != len(data) {
		t.Fatalf("the last feature runs %d bytes past the end", pos-len(data))
	}
	return s
}

func TestWriteLayout(t *testing.T) {
	pt, ls := orb.Point{1, 2}, orb.LineString{{0, 0}, {3, 1}}
	for _, tc := range []struct {
		name     string
		geoms    []orb.Geometry
		noIndex  bool
		wantType geometryType
		wantEnv  []float64
		wantNode uint16
	}{
		{"no features", nil, false, typeUnknown, nil, 0},
		{"points, indexed", []orb.Geometry{pt, orb.Point{-1, 5}}, false, typePoint, []float64{-1, 2, 1, 5}, 16},
		{"points, no index", []orb.Geometry{pt, orb.Point{-1, 5}}, true, typePoint, []float64{-1, 2, 1, 5}, 0},
		{"mixed is Unknown", []orb.Geometry{pt, ls}, false, typeUnknown, []float64{0, 0, 3, 2}, 16},
		{"nil geometries only", []orb.Geometry{nil, nil}, false, typeUnknown, nil, 16},
		{"a nil and an empty geometry among others", []orb.Geometry{nil, ls, orb.LineString{}}, false, typeLineString, []float64{0, 0, 3, 1}, 16},
		{"many features, three levels", slices.Repeat([]orb.Geometry{pt, orb.Point{5, 5}}, 150), false, typePoint, []float64{1, 2, 5, 5}, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.fgb")
			var fs []*spatial.Feature
			for i, g := range tc.geoms {
				fs = append(fs, &spatial.Feature{ID: fmt.Sprint(i), Geometry: g})
			}
			n, err := Write(context.Background(), path, Layer{Name: "x"}, sliceSource(fs), &Options{NoIndex: tc.noIndex})
			if err != nil || n != int64(len(fs)) {
				t.Fatalf("Write = %d, %v; want %d", n, err, len(fs))
			}
			s := readSummary(t, path)
			if s.count != uint64(len(fs)) || len(s.features) != len(fs) {
				t.Errorf("header counts %d features, the file holds %d; want %d", s.count, len(s.features), len(fs))
			}
			if s.typ != tc.wantType || s.nodeSize != tc.wantNode || !slices.Equal(s.envelope, tc.wantEnv) {
				t.Errorf("type %d, node size %d, envelope %v; want %d, %d, %v", s.typ, s.nodeSize, s.envelope, tc.wantType, tc.wantNode, tc.wantEnv)
			}
		})
	}
}

func TestWriteRefuses(t *testing.T) {
	cols := func(names ...string) []store.Column {
		var cs []store.Column
		for _, n := range names {
			cs = append(cs, store.Column{Name: n})
		}
		return cs
	}
	for _, tc := range []struct {
		name    string
		layer   Layer
		src     store.FeatureSource
		wantErr string
	}{
		{"column without a name", Layer{Name: "x", Columns: cols("a", "")}, sliceSource(nil), "column 2 has no name"},
		{"duplicate column", Layer{Name: "x", Columns: cols("a", "A")}, sliceSource(nil), `column "A" is there twice`},
		{"too many columns", Layer{Name: "x", Columns: make([]store.Column, maxColumns+1)}, sliceSource(nil), "more than 65536"},
		{"a value that does not fit", Layer{Name: "x", Columns: []store.Column{{Name: "n", Type: store.TypeBigint}}},
			sliceSource([]*spatial.Feature{{ID: "f1", Properties: map[string]any{"n": "many"}}}), `feature #1: feature "f1": property "n"`},
		{"a nil feature", Layer{Name: "x"}, sliceSource([]*spatial.Feature{nil}), "no feature and no error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Write(context.Background(), filepath.Join(dir, "x.fgb"), tc.layer, tc.src, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			if names := dirNames(t, dir); len(names) != 0 {
				t.Fatalf("left behind: %v", names)
			}
		})
	}
}

// TestWriteAtomic fails writes at every stage and checks that the file at path is the
// one that was there, and that nothing else is left in the directory.
func TestWriteAtomic(t *testing.T) {
	boom := errors.New("connection reset")
	for _, tc := range []struct {
		name    string
		src     func(cancel func()) store.FeatureSource
		noIndex bool
		wantErr error
	}{
		{"source fails first", func(func()) store.FeatureSource {
			return &testSource{n: 10, make: parcel, fail: func(int) error { return boom }}
		}, false, boom},
		{"source fails midway", func(func()) store.FeatureSource {
			return &testSource{n: 10000, make: parcel, fail: func(i int) error {
				if i == 5000 {
					return boom
				}
				return nil
			}}
		}, false, boom},
		{"cancelled midway", func(cancel func()) store.FeatureSource {
			return &testSource{n: 10000, make: func(i int) *spatial.Feature {
				if i == 5000 {
					cancel()
				}
				return parcel(i)
			}}
		}, false, context.Canceled},
		{"cancelled after the last feature, no index", func(cancel func()) store.FeatureSource {
			return &testSource{n: 100, make: parcel, fail: func(i int) error {
				if i == 100 {
					cancel()
				}
				return nil
			}}
		}, true, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "parcels.fgb")
			if err := os.WriteFile(path, []byte("the old file"), 0o640); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n, err := Write(ctx, path, Layer{Name: "parcels", Columns: parcelColumns}, tc.src(cancel), &Options{NoIndex: tc.noIndex})
			if !errors.Is(err, tc.wantErr) || n != 0 {
				t.Fatalf("Write = %d, %v; want 0, %v", n, err, tc.wantErr)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != "the old file" {
				t.Fatalf("the old file is now %q, %v", b, err)
			}
			if names := dirNames(t, dir); !slices.Equal(names, []string{"parcels.fgb"}) {
				t.Fatalf("left behind: %v", names)
			}
		})
	}
}

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "parcels.fgb")
	if err := os.WriteFile(path, []byte("the old file"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), path, Layer{Name: "parcels", Columns: parcelColumns}, &testSource{n: 10, make: parcel}, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("replaced file: %v, %v; want mode 0640 kept", fi, err)
	}
	if s := readSummary(t, path); s.count != 10 {
		t.Fatalf("%d features", s.count)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"parcels.fgb"}) {
		t.Fatalf("left behind: %v", names)
	}
	if _, err := Write(context.Background(), dir, Layer{Name: "x"}, sliceSource(nil), nil); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("writing over a directory: %v", err)
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestRecordSize holds Write to its promise of memory: 48 bytes a feature.
func TestRecordSize(t *testing.T) {
	if got := unsafe.Sizeof(record{}); got != 48 {
		t.Fatalf("a record is %d bytes, documented as 48", got)
	}
}
