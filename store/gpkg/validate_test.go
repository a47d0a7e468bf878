package gpkg_test

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// sliceSource is a FeatureSource over a slice.
type sliceSource []*spatial.Feature

func (s *sliceSource) Next() (*spatial.Feature, error) {
	if len(*s) == 0 {
		return nil, io.EOF
	}
	f := (*s)[0]
	*s = (*s)[1:]
	return f, nil
}

// TestGDALAcceptsTheFile writes what a run writes (feature tables in a known and an
// unknown CRS, a tile index, an asset index, the bookkeeping) and has GDAL judge it: its
// GeoPackage validator with extra checks and warnings as errors, and ogrinfo reading the
// layers, their SRS, extent and count, with a spatial filter answered by the R-tree.
func TestGDALAcceptsTheFile(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "check.gpkg")
	st, err := gpkg.Open(ctx, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := st.StartRun(ctx, store.RunStart{Flow: "check"})
	if err != nil {
		t.Fatal(err)
	}
	tables := []*store.FeatureTable{
		{Name: "parcels", SRID: 4326, Columns: []store.Column{
			{Name: "parcel_id", Property: "parcel_id", Type: store.TypeText},
			{Name: "area", Property: "area", Type: store.TypeDouble},
			{Name: "floors", Property: "floors", Type: store.TypeBigint},
			{Name: "built", Property: "built", Type: store.TypeDate},
			{Name: "surveyed", Property: "surveyed", Type: store.TypeTimestamptz},
			{Name: "public", Property: "public", Type: store.TypeBoolean},
		}},
		{Schema: "utm", Name: "roads", SRID: 25832, Mode: store.ModeUpsert, Key: []string{"road_id"},
			Columns: []store.Column{{Name: "road_id", Property: "road_id", Type: store.TypeBigint}}},
		{Name: "finland", SRID: 3067},
	}
	for i, tb := range tables {
		if err := st.EnsureFeatureTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("u%d", i)
		if err := st.AddUnits(ctx, run.ID, "t", []store.Unit{{Key: key}}); err != nil {
			t.Fatal(err)
		}
		var src sliceSource
		for j := 0; j < 100; j++ {
			x, y := 11+float64(j)/100, 48+float64(j)/200
			if tb.SRID != 4326 {
				x, y = 690000+float64(j)*10, 5330000+float64(j)*10
			}
			var g orb.Geometry = orb.Polygon{{{x, y}, {x + 0.001, y}, {x + 0.001, y + 0.001}, {x, y}}}
			if j%3 == 0 {
				g = orb.LineString{{x, y}, {x + 0.002, y + 0.001}}
			}
			src = append(src, &spatial.Feature{ID: fmt.Sprintf("f.%d", j), Geometry: g, Properties: map[string]any{
				"parcel_id": fmt.Sprint(j), "area": float64(j) * 1.5, "floors": float64(j % 4), "built": "2001-02-03",
				"surveyed": "2020-05-06T07:08:09+02:00", "public": j%2 == 0, "road_id": float64(j),
			}})
		}
		tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "t", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		c, err := tx.WriteFeatures(ctx, tb, &src)
		if err != nil || c.Inserted != 100 {
			t.Fatalf("%s: %+v %v", tb.Name, c, err)
		}
		if err := tx.Complete(ctx, c, nil, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		tx.Rollback(ctx)
		if err := st.FinishFeatureTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
	}
	tiles := &store.TileTable{Name: "tile_index"}
	assets := &store.AssetTable{Name: "scenes"}
	if err := st.EnsureTileTable(ctx, tiles); err != nil {
		t.Fatal(err)
	}
	if err := st.EnsureAssetTable(ctx, assets); err != nil {
		t.Fatal(err)
	}
	if err := st.AddUnits(ctx, run.ID, "files", []store.Unit{{Key: "f"}}); err != nil {
		t.Fatal(err)
	}
	tx, err := st.BeginUnit(ctx, store.UnitRef{RunID: run.ID, TaskID: "files", Key: "f"})
	if err != nil {
		t.Fatal(err)
	}
	fp := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{11.01, 48.01}}
	if _, err := tx.UpsertTiles(ctx, tiles, []store.TileRow{{Z: 12, X: 2177, Y: 1420, Footprint: fp, Status: store.FileOK, Path: "/x.png", Hash: []byte{1}, Bytes: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.UpsertAsset(ctx, assets, store.AssetRow{Collection: "c", Item: "i", Asset: "a", Footprint: fp.ToPolygon(), Path: "/a.tif", Hash: []byte{2}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Complete(ctx, store.Counts{Inserted: 2}, nil, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishRun(ctx, run.ID, store.Done, ""); err != nil {
		t.Fatal(err)
	}
	run.Close()
	st.Close()

	out, err := exec.Command("python3", "/usr/lib/python3/dist-packages/osgeo_utils/samples/validate_gpkg.py",
		"--extra", "--warning-as-error", file).CombinedOutput()
	if err != nil {
		t.Fatalf("GDAL's validate_gpkg.py refuses the file: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"layers", []string{file}, []string{"parcels", "utm_roads", "finland", "tile_index", "scenes", "geoflow_runs"}},
		{"parcels", []string{"-so", file, "parcels"}, []string{"Feature Count: 100", `ID["EPSG",4326]`, "Extent: (11.000000, 48.000000) - (11.99200",
			"built: Date", "surveyed: DateTime", "floors: Integer64", "area: Real", "public: Integer(Boolean)"}},
		{"known projected CRS", []string{"-so", file, "utm_roads"}, []string{"Feature Count: 100", `ID["EPSG",25832]`}},
		{"unknown CRS resolved by GDAL", []string{"-so", file, "finland"}, []string{"Feature Count: 100", "ETRS89 / TM35FIN"}},
		{"R-tree answers a spatial filter", []string{"-so", "-spat", "11.5", "48", "11.6", "49", file, "parcels"}, []string{"Feature Count: 11"}}, // x from 11.5 to 11.6, edges included
		{"values", []string{"-q", "-where", "parcel_id = '3'", file, "parcels"}, []string{"built (Date) = 2001/02/03", "surveyed (DateTime) = 2020/05/06 05:08:09", "public (Integer(Boolean)) = 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command("ogrinfo", tc.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("ogrinfo %s: %v\n%s", strings.Join(tc.args, " "), err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("ogrinfo %s does not say %q:\n%s", strings.Join(tc.args, " "), w, out)
				}
			}
			if tc.name == "layers" && strings.Contains(string(out), "geoflow_units") {
				t.Errorf("bookkeeping tables are listed as layers:\n%s", out)
			}
		})
	}
}
