package export_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
)

// stores opens a new, migrated store of each kind: the tests run against both.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"postgis", func(t *testing.T) store.Store {
		s, err := postgis.Open(context.Background(), testdb.URL(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return migrated(t, s)
	}},
	{"gpkg", func(t *testing.T) store.Store {
		s, err := gpkg.Open(context.Background(), filepath.Join(t.TempDir(), "s.gpkg"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return migrated(t, s)
	}},
}

func migrated(t *testing.T, s store.Store) store.Store {
	t.Helper()
	t.Cleanup(s.Close)
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// reader is s as an export reads it.
type reader interface {
	store.Store
	store.Tables
	store.Changes
}

func asReader(t *testing.T, s store.Store) reader {
	t.Helper()
	r, ok := s.(reader)
	if !ok {
		t.Fatalf("%T is not a store.Tables and store.Changes", s)
	}
	return r
}

// parcelsTable is the table the tests export: a column of every type.
func parcelsTable(name string, srid int) *store.FeatureTable {
	return &store.FeatureTable{Name: name, SRID: srid, Columns: []store.Column{
		{Name: "name", Property: "name", Type: store.TypeText},
		{Name: "n", Property: "n", Type: store.TypeBigint},
		{Name: "area", Property: "area", Type: store.TypeDouble},
		{Name: "ok", Property: "ok", Type: store.TypeBoolean},
		{Name: "day", Property: "day", Type: store.TypeDate},
	}}
}

// parcels are points and squares on a grid over Munich, one without properties: n
// features, ids p.0 ... .
func parcels(n int) []*spatial.Feature {
	var fs []*spatial.Feature
	for i := range n {
		x, y := 11.4+float64(i%10)*0.02, 48.05+float64(i/10)*0.02
		var g orb.Geometry = orb.Point{x, y}
		if i%3 == 1 {
			g = orb.Polygon{{{x, y}, {x + 0.005, y}, {x + 0.005, y + 0.005}, {x, y + 0.005}, {x, y}}}
		}
		props := map[string]any{"name": fmt.Sprintf("parcel %d", i), "n": int64(i * 10), "area": float64(i) / 4,
			"ok": i%2 == 0, "day": fmt.Sprintf("2024-05-%02d", 1+i%28)}
		if i == 7 {
			props = map[string]any{}
		}
		fs = append(fs, &spatial.Feature{ID: fmt.Sprintf("p.%d", i), Geometry: g, Properties: props})
	}
	return fs
}

// source is a FeatureSource over a slice.
type source []*spatial.Feature

func (s *source) Next() (*spatial.Feature, error) {
	if len(*s) == 0 {
		return nil, io.EOF
	}
	f := (*s)[0]
	*s = (*s)[1:]
	return f, nil
}

// fill writes fs into table as one finished run of flow "fill".
func fill(t *testing.T, s store.Store, table *store.FeatureTable, fs []*spatial.Feature) {
	t.Helper()
	ctx := context.Background()
	if err := s.EnsureFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	run, err := s.StartRun(ctx, store.RunStart{Flow: "fill-" + table.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := s.SetTaskState(ctx, run.ID, "a", "fake", store.Running, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUnits(ctx, run.ID, "a", []store.Unit{{Key: "u"}}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "a", Key: "u"})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	src := source(fs)
	c, err := tx.WriteFeatures(ctx, table, &src)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishFeatureTable(ctx, table); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
}

// requireGDAL finds GDAL's tools: without them the GDAL checks skip, unless
// GEOFLOW_REQUIRE_GDAL=1 makes that a failure (as the other GDAL tests do).
func requireGDAL(t *testing.T) {
	t.Helper()
	if testing.Short() && os.Getenv("GEOFLOW_REQUIRE_GDAL") != "1" {
		t.Skip("GDAL checks take a while; skipped in -short mode")
	}
	for _, tool := range []string{"ogrinfo", "ogr2ogr", "python3", validator} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, serr := os.Stat(tool); serr == nil {
				continue
			}
			if os.Getenv("GEOFLOW_REQUIRE_GDAL") == "1" {
				t.Fatalf("GEOFLOW_REQUIRE_GDAL=1 but %s is missing: %v", tool, err)
			}
			t.Skipf("%s missing (GDAL is only for checks): %v", tool, err)
		}
	}
}

const validator = "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py"

// gdal runs a GDAL tool and returns its output, failing the test when it fails or
// writes an error.
func gdal(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "ERROR") {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// failingReader fails its reads after after features.
type failingReader struct {
	reader
	after int
}

var errMidway = errors.New("the store went away")

func (f failingReader) ReadFeatures(ctx context.Context, t store.StoredTable, q store.FeatureQuery, fn func(*store.StoredFeature) error) error {
	n := 0
	err := f.reader.ReadFeatures(ctx, t, q, func(sf *store.StoredFeature) error {
		if n++; n > f.after {
			return errMidway
		}
		return fn(sf)
	})
	return err
}
