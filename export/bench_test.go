package export_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/export"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
	"github.com/geoflow/geoflow/store/postgis"
)

// The export benchmarks read a table a harvest stored (bench/export.sh loads a million
// parcels): GEOFLOW_BENCH_EXPORT_STORE is the store (a GeoPackage's path or a PostgreSQL
// URL) and GEOFLOW_BENCH_EXPORT_TABLE the table (export_bench by default). Without a
// store they are skipped: they measure, they do not test. Run one pass of each:
//
//	GEOFLOW_BENCH_EXPORT_STORE=/tmp/store.gpkg go test ./export -run - -bench Export -benchtime 1x -benchmem

// benchReader opens the benchmarks' store and finds its table.
func benchReader(b *testing.B) (export.Reader, store.StoredTable) {
	b.Helper()
	where := os.Getenv("GEOFLOW_BENCH_EXPORT_STORE")
	if where == "" {
		b.Skip("GEOFLOW_BENCH_EXPORT_STORE is not set")
	}
	table := os.Getenv("GEOFLOW_BENCH_EXPORT_TABLE")
	if table == "" {
		table = "export_bench"
	}
	ctx := context.Background()
	var r export.Reader
	if strings.HasPrefix(where, "postgres") {
		s, err := postgis.Open(ctx, where, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Close)
		r = s
	} else {
		s, err := gpkg.Open(ctx, where, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(s.Close)
		r = s
	}
	t, err := r.StoredTable(ctx, "", table)
	if err != nil {
		b.Fatal(err)
	}
	return r, t
}

// BenchmarkExportRead measures the store's side alone: every row of the table read
// through ReadFeatures, as an export reads it, and dropped.
func BenchmarkExportRead(b *testing.B) {
	r, t := benchReader(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = 0
		if err := r.ReadFeatures(context.Background(), t, store.FeatureQuery{SRID: t.SRID}, func(*store.StoredFeature) error {
			n++
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(n, 1)), "ns/feature")
}

// BenchmarkExportSource measures the reading side of an export, the store and the
// hand-over to the writer: every feature pulled from the job's source and dropped.
func BenchmarkExportSource(b *testing.B) {
	r, t := benchReader(b)
	j, err := export.Prepare(context.Background(), export.Spec{Table: t.Name, Path: filepath.Join(b.TempDir(), "x.fgb")}, r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n = 0
		err := export.Drain(context.Background(), j, func(*spatial.Feature) { n++ })
		if err != nil && err != io.EOF {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(n, 1)), "ns/feature")
}

// BenchmarkExport measures whole exports of the table, to each file format.
func BenchmarkExport(b *testing.B) {
	r, t := benchReader(b)
	for _, file := range []string{"out.fgb", "out.gpkg"} {
		b.Run(file, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), file)
			b.ReportAllocs()
			var res export.Result
			for b.Loop() {
				var err error
				if res, err = export.Write(context.Background(), export.Spec{Table: t.Name, Path: path}, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(res.Features, 1)), "ns/feature")
		})
	}
}
