package gml

import (
	"bytes"
	"os"
	"testing"
)

// devServerDoc is testdata/devserver-wfs20.xml (a page of `geoflow dev wfs`
// in GML 3.2, as bench-cpu reads it: polygon parcels with 10 properties)
// with its members repeated to n features.
func devServerDoc(tb testing.TB, n int) []byte {
	tb.Helper()
	page, err := os.ReadFile("testdata/devserver-wfs20.xml")
	if err != nil {
		tb.Fatal(err)
	}
	first := bytes.Index(page, []byte("<wfs:member>"))
	last := bytes.LastIndex(page, []byte("</wfs:FeatureCollection>"))
	members := page[first:last]
	per := bytes.Count(members, []byte("<wfs:member>"))
	var doc bytes.Buffer
	doc.Write(page[:first])
	for i := 0; i < n; i += per {
		doc.Write(members)
	}
	doc.Write(page[last:])
	return doc.Bytes()
}

// BenchmarkReaderDevServer is BenchmarkReader on the sample server's GML
// 3.2 (devServerDoc): what bench-cpu's GML runs decode.
func BenchmarkReaderDevServer(b *testing.B) {
	doc := devServerDoc(b, 10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		readDoc(b, doc, 10000)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/10000, "cpu-ns/feature")
}

// BenchmarkReaderDevServerReuse is BenchmarkReaderDevServer with the reader reusing each
// feature's map (ReuseFeatures), as a store's harvest reads.
func BenchmarkReaderDevServerReuse(b *testing.B) {
	doc := devServerDoc(b, 10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		r := NewReader(bytes.NewReader(doc), Options{WFSVersion: "2.0.0"})
		r.ReuseFeatures()
		readCount(b, r, 10000)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/10000, "cpu-ns/feature")
}
