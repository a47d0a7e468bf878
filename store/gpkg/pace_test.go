package gpkg

import (
	"runtime/debug"
	"testing"
)

func TestPacePercent(t *testing.T) {
	for _, c := range []struct {
		base, off int
		tight     bool
		want      int
	}{
		{400, 0, false, 400},
		{400, offHeapTight / 2, false, 300},
		{400, offHeapTight, false, 200},
		{400, 4 * offHeapTight, false, 200}, // the floor holds
		{400, -1, false, 400},
		{400, 0, true, 100},
		{400, offHeapTight, true, 100},
		{150, offHeapTight, false, 150}, // tighter than the floor already
		{150, 0, true, 100},
		{50, offHeapTight, true, 50},  // the environment's tighter pace stays
		{-1, offHeapTight, false, -1}, // GOGC=off is left alone
		{-1, 0, true, 100},            // but for packing
	} {
		if got := pacePercent(c.base, c.off, c.tight); got != c.want {
			t.Errorf("pacePercent(%d, %d, %v) = %d, want %d", c.base, c.off, c.tight, got, c.want)
		}
	}
}

// gcPercent reads the collector's pace.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestOffHeapPace: mapping memory outside the heap tightens the pace in proportion,
// tightGC tightens it further while it lasts, and freeing everything puts the process's
// own pace back.
func TestOffHeapPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	a, err := offHeap(offHeapTight / 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := gcPercent(); got != 350 {
		t.Errorf("with 8 MiB outside the heap: GOGC=%d, want 350", got)
	}
	b, err := offHeap(offHeapTight / 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := gcPercent(); got != 300 {
		t.Errorf("with 16 MiB outside the heap: GOGC=%d, want 300", got)
	}
	restore := tightGC()
	if got := gcPercent(); got != 100 {
		t.Errorf("packing: GOGC=%d, want 100", got)
	}
	freeOffHeap(a)
	if got := gcPercent(); got != 100 {
		t.Errorf("packing, 8 MiB freed: GOGC=%d, want 100", got)
	}
	restore()
	restore() // a second call is a no-op
	if got := gcPercent(); got != 350 {
		t.Errorf("packed, 8 MiB outside the heap: GOGC=%d, want 350", got)
	}
	freeOffHeap(b)
	if got := gcPercent(); got != 400 {
		t.Errorf("all freed: GOGC=%d, want 400", got)
	}
	if gcPace.held || gcPace.offHeap != 0 || gcPace.tight != 0 {
		t.Errorf("all freed: the pace is still held (held %v, %d bytes outside the heap, %d packings)", gcPace.held, gcPace.offHeap, gcPace.tight)
	}
}
