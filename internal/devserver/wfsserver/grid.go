package wfsserver

import (
	"math"

	"github.com/paulmach/orb"
)

// maxOverhang is how far, in cell units, a parcel may reach beyond its own
// grid cell. Straddling parcels reach 0.08; the margin keeps candidate search
// safe after coordinates are rounded to 1e-7 degrees.
const maxOverhang = 0.1

// layout places parcel i in grid cell (i/cols, i%cols) over the extent. All
// geometry is recomputed from (seed, i) on demand: nothing is stored per
// feature, so a million parcels cost no memory and a bbox query finds its
// candidates from the cell range alone.
type layout struct {
	n          int
	cols, rows int
	ext        orb.Bound
	dx, dy     float64
	seed       uint64
}

func newLayout(n int, ext orb.Bound, seed int64) layout {
	w := ext.Max[0] - ext.Min[0]
	h := ext.Max[1] - ext.Min[1]
	// Cells roughly square on the ground, not in degrees.
	aspect := w * math.Cos((ext.Min[1]+ext.Max[1])/2*math.Pi/180) / h
	cols := max(1, int(math.Ceil(math.Sqrt(float64(n)*aspect))))
	cols = min(cols, n)
	rows := (n + cols - 1) / cols
	return layout{
		n: n, cols: cols, rows: rows, ext: ext,
		dx: w / float64(cols), dy: h / float64(rows),
		seed: mix(uint64(seed) ^ 0x6765_6f66_6c6f_77),
	}
}

// mix is splitmix64's finalizer: a cheap, well-spread hash.
func mix(a uint64) uint64 {
	a += 0x9e3779b97f4a7c15
	a = (a ^ a>>30) * 0xbf58476d1ce4e5b9
	a = (a ^ a>>27) * 0x94d049bb133111eb
	return a ^ a>>31
}

func (l *layout) hash(i int, salt uint64) uint64 {
	return mix(l.seed ^ mix(uint64(i)*0x100000001b3+salt))
}

// unit maps a hash to [0,1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

func round7(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// shape is one parcel's geometry in a reusable buffer. A polygon has its
// exterior in rings[0] and an optional hole in rings[1]; a multipolygon has one
// simple polygon per ring. Rings are closed; exteriors counter-clockwise, holes
// clockwise (RFC 7946 order).
type shape struct {
	multi  bool
	nrings int
	rings  [3][]orb.Point
	bound  orb.Bound
	buf    [64]orb.Point
	used   int
	// An edited shape is scaled by sc about the cell's centre and shifted by (mx, my),
	// in cell units; sc is 0 for an unedited one.
	sc, mx, my float64
}

// shape computes parcel i. About 8% of parcels are shifted towards a cell
// edge and cross it by up to 0.08 cell, into the neighbour's empty margin, so
// tiling a bbox along cell edges meets them twice; about 9% have a hole and
// about 4% are two-part multipolygons. An edit that moves the parcel shrinks and
// shifts it within its reach (see Changes.Edited).
func (l *layout) shape(i int, e edit, sh *shape) {
	h := l.hash(i, 1)
	row, col := i/l.cols, i%l.cols
	sh.multi, sh.nrings, sh.used = false, 0, 0
	sh.sc, sh.mx, sh.my = 0, 0, 0
	if e.moved {
		s, c := math.Sincos(2 * math.Pi * unit(l.hash(i, 20+uint64(e.rev))))
		sh.sc, sh.mx, sh.my = editShrink, editShift*c, editShift*s
	}
	sh.bound = orb.Bound{Min: orb.Point{math.Inf(1), math.Inf(1)}, Max: orb.Point{math.Inf(-1), math.Inf(-1)}}
	cx, cy := 0.5, 0.5
	if h%12 == 0 {
		switch (h >> 8) % 4 {
		case 0:
			cx += 0.2
		case 1:
			cx -= 0.2
		case 2:
			cy += 0.2
		default:
			cy -= 0.2
		}
	}
	u := unit(l.hash(i, 2))
	if (h>>16)%23 == 7 {
		sh.multi = true
		l.ring(sh, i, row, col, cx-0.18, cy, 0.16+0.02*u, 17, true, 10)
		l.ring(sh, i, row, col, cx+0.22, cy, 0.12+0.02*u, 17, true, 11)
		return
	}
	r := 0.30 + 0.08*u
	l.ring(sh, i, row, col, cx, cy, r, 17, true, 10)
	if (h>>24)%11 == 3 {
		l.ring(sh, i, row, col, cx, cy, 0.4*r, 7, false, 12)
	}
}

// ring appends a jittered star-shaped ring: vertex angles stay strictly
// monotonic and radii stay in [0.8R, R], so the ring never self-intersects and
// a hole of radius <= 0.4R stays inside its exterior.
func (l *layout) ring(sh *shape, i, row, col int, cx, cy, r float64, nv int, ccw bool, salt uint64) {
	start := sh.used
	step := 2 * math.Pi / float64(nv)
	base := l.hash(i, salt)
	for k := range nv {
		hk := mix(base + uint64(k))
		th := (float64(k) + (unit(hk)-0.5)*0.6) * step
		if !ccw {
			th = -th
		}
		rk := r * (0.8 + 0.2*unit(mix(hk)))
		s, c := math.Sincos(th)
		u, v := cx+rk*c, cy+rk*s
		if sh.sc != 0 {
			u, v = 0.5+sh.sc*(u-0.5)+sh.mx, 0.5+sh.sc*(v-0.5)+sh.my
		}
		p := orb.Point{
			round7(l.ext.Min[0] + (float64(col)+u)*l.dx),
			round7(l.ext.Min[1] + (float64(row)+v)*l.dy),
		}
		sh.buf[sh.used] = p
		sh.used++
		sh.bound.Min[0] = min(sh.bound.Min[0], p[0])
		sh.bound.Min[1] = min(sh.bound.Min[1], p[1])
		sh.bound.Max[0] = max(sh.bound.Max[0], p[0])
		sh.bound.Max[1] = max(sh.bound.Max[1], p[1])
	}
	sh.buf[sh.used] = sh.buf[start]
	sh.used++
	sh.rings[sh.nrings] = sh.buf[start:sh.used:sh.used]
	sh.nrings++
}

// geometry converts the shape to a freshly allocated orb geometry.
func (sh *shape) geometry() orb.Geometry {
	clone := func(r []orb.Point) orb.Ring { return append(orb.Ring(nil), r...) }
	if sh.multi {
		mp := make(orb.MultiPolygon, sh.nrings)
		for k := range sh.nrings {
			mp[k] = orb.Polygon{clone(sh.rings[k])}
		}
		return mp
	}
	p := make(orb.Polygon, sh.nrings)
	for k := range sh.nrings {
		p[k] = clone(sh.rings[k])
	}
	return p
}

// areaDeg2 is the shape's area in square degrees (holes subtracted).
func (sh *shape) areaDeg2() float64 {
	var a float64
	for k := range sh.nrings {
		r := sh.rings[k]
		var s float64
		for j := 0; j+1 < len(r); j++ {
			s += r[j][0]*r[j+1][1] - r[j+1][0]*r[j][1]
		}
		a += s / 2 // CW holes come out negative
	}
	return math.Abs(a)
}

// intersects reports whether the shape and the closed rectangle b share a
// point, the semantics of the OGC BBOX operator.
func (sh *shape) intersects(b orb.Bound) bool {
	if !sh.bound.Intersects(b) {
		return false
	}
	for k := range sh.nrings {
		r := sh.rings[k]
		for j := 0; j+1 < len(r); j++ {
			if segmentTouchesRect(r[j], r[j+1], b) {
				return true
			}
		}
	}
	// No edge touches b: b lies wholly inside or wholly outside the area.
	p := b.Min
	if sh.multi {
		for k := range sh.nrings {
			if ringContains(sh.rings[k], p) {
				return true
			}
		}
		return false
	}
	return ringContains(sh.rings[0], p) && (sh.nrings < 2 || !ringContains(sh.rings[1], p))
}

// segmentTouchesRect is Liang-Barsky clipping reduced to a yes/no answer.
func segmentTouchesRect(p, q orb.Point, b orb.Bound) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := q[0]-p[0], q[1]-p[1]
	ps := [4]float64{-dx, dx, -dy, dy}
	qs := [4]float64{p[0] - b.Min[0], b.Max[0] - p[0], p[1] - b.Min[1], b.Max[1] - p[1]}
	for k := range 4 {
		if ps[k] == 0 {
			if qs[k] < 0 {
				return false
			}
			continue
		}
		t := qs[k] / ps[k]
		if ps[k] < 0 {
			if t > t1 {
				return false
			}
			t0 = max(t0, t)
		} else {
			if t < t0 {
				return false
			}
			t1 = min(t1, t)
		}
	}
	return true
}

func ringContains(r []orb.Point, p orb.Point) bool {
	in := false
	for j, k := 0, len(r)-1; j < len(r); k, j = j, j+1 {
		a, b := r[j], r[k]
		if (a[1] > p[1]) != (b[1] > p[1]) && p[0] < (b[0]-a[0])*(p[1]-a[1])/(b[1]-a[1])+a[0] {
			in = !in
		}
	}
	return in
}

// selection is the set of parcels a query matches, in index order (which is
// also parcel_id order). Without a bbox it is every parcel; with one, rows of
// the candidate cell range are walked, interior cells match without a test
// and only edge cells are tested exactly. Only parcels the revision serves
// match: those at or above its limit are cut off the last rows, the deleted
// ones are counted out of interior runs by binary search.
type selection struct {
	l      *layout
	v      *revision
	all    bool
	ids    []int // explicit RESOURCEID list, sorted; nil if none
	b      orb.Bound
	c0, c1 int // candidate columns
	r0, r1 int // candidate rows
	i0, i1 int // columns whose whole reach lies inside b
	j0, j1 int // rows whose whole reach lies inside b
	sh     shape
}

func (l *layout) selectAll(v *revision) *selection { return &selection{l: l, v: v, all: true} }

func clampInt(v float64, lo, hi int) int {
	switch {
	case v < float64(lo):
		return lo
	case v > float64(hi):
		return hi
	}
	return int(v)
}

func (l *layout) selectBound(b orb.Bound, v *revision) *selection {
	s := &selection{l: l, v: v, b: b}
	u0 := (b.Min[0] - l.ext.Min[0]) / l.dx
	u1 := (b.Max[0] - l.ext.Min[0]) / l.dx
	v0 := (b.Min[1] - l.ext.Min[1]) / l.dy
	v1 := (b.Max[1] - l.ext.Min[1]) / l.dy
	// Cell c reaches [c-maxOverhang, c+1+maxOverhang].
	s.c0 = clampInt(math.Ceil(u0-1-maxOverhang), 0, l.cols)
	s.c1 = clampInt(math.Floor(u1+maxOverhang), -1, l.cols-1)
	s.r0 = clampInt(math.Ceil(v0-1-maxOverhang), 0, l.rows)
	s.r1 = clampInt(math.Floor(v1+maxOverhang), -1, l.rows-1)
	s.i0 = clampInt(math.Ceil(u0+maxOverhang), 0, l.cols)
	s.i1 = clampInt(math.Floor(u1-1-maxOverhang), -1, l.cols-1)
	s.j0 = clampInt(math.Ceil(v0+maxOverhang), 0, l.rows)
	s.j1 = clampInt(math.Floor(v1-1-maxOverhang), -1, l.rows-1)
	return s
}

// restrict narrows the selection to explicit parcel indexes.
func (s *selection) restrict(ids []int) { s.ids = ids }

func (s *selection) match(i int) bool {
	if !s.v.present(i) {
		return false
	}
	if s.all {
		return true
	}
	s.l.shape(i, s.v.edit(i), &s.sh)
	return s.sh.intersects(s.b)
}

func (s *selection) rowCols(r int) (lo, hi int) {
	last := min(s.l.cols, s.v.limit-r*s.l.cols) - 1
	return s.c0, min(s.c1, last)
}

func (s *selection) rowCount(r int) int {
	lo, hi := s.rowCols(r)
	if hi < lo {
		return 0
	}
	n := 0
	inner := r >= s.j0 && r <= s.j1
	for c := lo; c <= hi; c++ {
		if inner && c >= s.i0 && c <= s.i1 {
			end := min(hi, s.i1)
			n += end - c + 1 - s.v.deletedIn(r*s.l.cols+c, r*s.l.cols+end)
			c = end
			continue
		}
		if s.match(r*s.l.cols + c) {
			n++
		}
	}
	return n
}

// count is the number of matched parcels.
func (s *selection) count() int {
	if s.ids != nil {
		n := 0
		for _, i := range s.ids {
			if s.match(i) {
				n++
			}
		}
		return n
	}
	if s.all {
		return s.v.count()
	}
	n := 0
	for r := s.r0; r <= s.r1; r++ {
		n += s.rowCount(r)
	}
	return n
}

// appendRange appends the parcels at match positions [lo, hi) to dst.
func (s *selection) appendRange(dst []int, lo, hi int) []int {
	if hi <= lo {
		return dst
	}
	if s.ids != nil {
		pos := 0
		for _, i := range s.ids {
			if !s.match(i) {
				continue
			}
			if pos >= lo && pos < hi {
				dst = append(dst, i)
			}
			pos++
		}
		return dst
	}
	if s.all {
		for i := range s.v.all(lo) {
			dst = append(dst, i)
			if lo++; lo == hi {
				break
			}
		}
		return dst
	}
	pos := 0
	for r := s.r0; r <= s.r1 && pos < hi; r++ {
		if rc := s.rowCount(r); pos+rc <= lo {
			pos += rc
			continue
		}
		clo, chi := s.rowCols(r)
		inner := r >= s.j0 && r <= s.j1
		for c := clo; c <= chi && pos < hi; c++ {
			i := r*s.l.cols + c
			if (inner && c >= s.i0 && c <= s.i1 && s.v.present(i)) || s.match(i) {
				if pos >= lo {
					dst = append(dst, i)
				}
				pos++
			}
		}
	}
	return dst
}
