package flatgeobuf

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWrite writes 100,000 parcels (polygons of 5 points) with 4 properties, with
// the index, and reports the time and allocations per feature. The features are made
// beforehand, so that only the writer is measured. GEOFLOW_BENCH_FGB, when set, is where
// the file is written (bench/flatgeobuf.sh hands it to GDAL); else a temporary directory.
func BenchmarkWrite(b *testing.B) {
	const n = 100000
	fs := features(n, parcel)
	path := os.Getenv("GEOFLOW_BENCH_FGB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "parcels.fgb")
	}
	l := Layer{Name: "parcels", SRID: 4326, Columns: parcelColumns}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(context.Background(), path, l, sliceSource(fs), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/feature")
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size())/n, "bytes/feature")
	}
}
