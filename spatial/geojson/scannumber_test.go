package geojson

import (
	"strings"
	"testing"
)

// BenchmarkScanNumber checks numbers of every shape the grammar has (the
// general path, which fastFloat leaves numbers with exponents, long mantissas
// and those at the end of the window to), as skip does.
func BenchmarkScanNumber(b *testing.B) {
	nums := []string{"0", "-0", "7", "1234567", "-98.7654321", "0.000125", "1e5", "-2.5E-7",
		"6.02214076e+23", "12345678901234567890123", "-0.1234567890123456789", "1e999"}
	doc := []byte(strings.Repeat(strings.Join(nums, ",")+",", 100))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		s := bytesScanner(doc)
		for s.pos < s.end {
			if _, err := s.number(); err != nil {
				b.Fatal(err)
			}
			s.pos++ // the comma
		}
	}
}
