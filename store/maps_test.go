package store

import (
	"bytes"
	"testing"
)

func TestTileID(t *testing.T) {
	h := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}
	if got, want := TileID(h), uint64(0x010203040506); got != want {
		t.Fatalf("TileID = %#x, want %#x", got, want)
	}
	if got := TileID([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); got >= 1<<53 {
		t.Fatalf("TileID %d is not exact in a browser's numbers", got)
	}
	for _, tc := range []struct {
		name string
		hash []byte
		in   bool
	}{
		{"same prefix", h, true},
		{"prefix itself", h[:6], true},
		{"next prefix", []byte{1, 2, 3, 4, 5, 7}, false},
		{"previous", []byte{1, 2, 3, 4, 5, 5, 0xff}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := TileIDRange(TileID(h))
			in := bytes.Compare(tc.hash, lo) >= 0 && bytes.Compare(tc.hash, hi) < 0
			if in != tc.in {
				t.Fatalf("%x in [%x, %x) = %v, want %v", tc.hash, lo, hi, in, tc.in)
			}
		})
	}
	lo, hi := TileIDRange(1<<48 - 1)
	if full := bytes.Repeat([]byte{0xff}, 32); bytes.Compare(full, lo) < 0 || bytes.Compare(full, hi) >= 0 {
		t.Fatalf("the last id's range [%x, %x) misses %x", lo, hi, full)
	}
}

func TestSampleBelow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expected float64
		limit    int
		want     int
	}{
		{"fits", 100, 20000, 65536},
		{"exactly", 20000, 20000, 65536},
		{"twice", 40000, 20000, 32768},
		{"huge", 1e12, 20000, 1},
		{"no limit", 1e9, 0, 65536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SampleBelow(tc.expected, tc.limit); got != tc.want {
				t.Fatalf("SampleBelow(%g, %d) = %d, want %d", tc.expected, tc.limit, got, tc.want)
			}
		})
	}
}
