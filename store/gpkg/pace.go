package gpkg

import (
	"runtime/debug"
	"sync"
)

// The collector's pace while the store holds memory outside the Go heap.
//
// geoflow runs with GOGC=400: the heap may grow to five times what is live before a
// collection, which costs little memory while little is live (a harvest keeps about
// 10 MB live) and saves collections. A new table's deferred index (fidTable, fidBoxes)
// adds 32 bytes per feature outside the heap, which the collector does not see: on
// 1,000,000 features, 32 MB on top of a heap the pace lets reach 50 MB, and a peak RSS
// of 115-127 MB against 92-105 with this (GML into a new GeoPackage). So the pace
// tightens as that memory grows, from the process's own down to offHeapFloor at
// offHeapTight and beyond, and goes back once the memory is freed.
//
// tightGC's packing of an R-tree tightens it to GOGC=100 too, while it lasts. A pace
// from the environment (GOGC) tighter than either stays; GOGC=off is left alone but for
// the packing.
var gcPace struct {
	mu      sync.Mutex
	offHeap int // bytes mapped by offHeap and not yet freed
	tight   int // tightGC calls not yet restored
	base    int // the pace before the store changed it; valid while held
	held    bool
}

// offHeapTight is the memory outside the heap at which the pace reaches offHeapFloor.
const (
	offHeapTight = 32 << 20
	offHeapFloor = 200
)

// offHeap is n zeroed bytes the Go collector neither scans nor counts (on systems
// without anonymous mappings, on the heap), for fidTable and fidBoxes; freeOffHeap
// gives them back. Both set the collector's pace (gcPace).
func offHeap(n int) ([]byte, error) {
	b, err := mapAnon(n)
	if err == nil {
		repace(len(b), 0)
	}
	return b, err
}

func freeOffHeap(b []byte) {
	unmapAnon(b)
	repace(-len(b), 0)
}

// tightGC makes the collector keep pace (GOGC=100, unless the environment's is tighter;
// also where the environment switched it off) while an R-tree is packed, and returns what
// puts the pace back: the tree's node blobs and the rows read for it are garbage at once,
// which geoflow's GOGC=400 would let pile up. The harvest's buffers, garbage by now, go
// back to the system first.
func tightGC() (restore func()) {
	repace(0, 1)
	debug.FreeOSMemory()
	var once sync.Once
	return func() { once.Do(func() { repace(0, -1) }) }
}

// repace records dOff more bytes outside the heap and dTight more tightGC calls, and
// sets the collector's pace from them.
func repace(dOff, dTight int) {
	p := &gcPace
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offHeap += dOff
	p.tight += dTight
	if !p.held {
		if p.offHeap <= 0 && p.tight <= 0 {
			return
		}
		p.base = debug.SetGCPercent(100)
		debug.SetGCPercent(p.base)
		p.held = true
	}
	if p.offHeap <= 0 && p.tight <= 0 {
		debug.SetGCPercent(p.base)
		p.held = false
		return
	}
	debug.SetGCPercent(pacePercent(p.base, p.offHeap, p.tight > 0))
}

// pacePercent is the GOGC for a process whose own is base, with off bytes held outside
// the heap: base less a share of the way down to offHeapFloor as off grows to
// offHeapTight, and 100 while tight. A pace already tighter stays; GOGC=off (a negative
// base) stays too, but for packing, whose garbage would otherwise never be collected.
func pacePercent(base, off int, tight bool) int {
	p := base
	if base > offHeapFloor {
		p = base - (base-offHeapFloor)*min(max(off, 0), offHeapTight)/offHeapTight
	}
	if tight && (base > 100 || base < 0) {
		p = 100
	}
	return p
}
