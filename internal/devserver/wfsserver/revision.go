// Revisions of the sample data: the server can change its parcels between two harvests,
// as a source that is edited upstream does, so that a harvester keeping a copy true
// (updating what changed, deleting what is gone) can be checked against exact counts.

package wfsserver

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Changes is the change set parcels go through between revision 0 and revision 1. Which
// parcels it picks depends on Seed, Features and Added only: Deleted and Edited parcels
// are taken, in that order, from one seeded golden-ratio stride over the indexes
// 0..Features-Added-1, so each kind is spread over the whole extent and the kinds are
// disjoint. The zero value changes nothing.
type Changes struct {
	// Edited parcels keep their index and ids but change their payload from revision 1
	// on: assessed_value rises by 1,000.00 per revision (from 50,000.00 where it was
	// nil), updated_at becomes 2025-01-01 plus one day per revision after the first,
	// later than any revision-0 value, and every other edited parcel (the first, third, ...) also has
	// its geometry shrunk to 0.9 about its cell's centre and shifted by 0.03 cell in a
	// direction drawn from (Seed, index, revision), which changes area_m2 as well. The
	// shape stays within its cell's margin, so tiling still meets it where it did.
	// Edits are keyed by the revision: revision 2 differs from revision 1 again.
	Edited int
	// Deleted parcels are served at revision 0 only.
	Deleted int
	// Added parcels, the last Added indexes Features-Added..Features-1, are served
	// from revision 1 on only.
	Added int
	// Hidden parcels, taken after the Edited ones from the same stride, are left out of
	// every listing from revision 1 on (bbox and whole-layer queries, their counts and
	// numberMatched lowered to match) while still answered by id (RESOURCEID/FEATUREID,
	// OGC API items/{id}, ArcGIS objectIds): a server whose listing an access rule or a
	// view filters, consistently wrong and looking right.
	Hidden int
}

// Change is what Changes does to one parcel.
type Change int

// The changes a parcel can go through between revision 0 and 1.
const (
	ChangeNone Change = iota
	ChangeEdited
	ChangeDeleted
	ChangeAdded
)

// String returns "unchanged", "edited", "deleted" or "added".
func (c Change) String() string {
	switch c {
	case ChangeEdited:
		return "edited"
	case ChangeDeleted:
		return "deleted"
	case ChangeAdded:
		return "added"
	}
	return "unchanged"
}

// edit is how a parcel differs from its revision-0 payload; the zero value is no edit.
type edit struct {
	rev   int  // the revision of the edit; 0 means none
	moved bool // the geometry is shrunk and shifted too
}

// editShrink and editShift move an edited geometry within its cell: the widest parcel
// reaches 0.58 cell from the cell's centre, and 0.9*0.58+0.03 < 0.5+maxOverhang.
const (
	editShrink = 0.9
	editShift  = 0.03
)

// revision is one immutable state of the data, swapped in whole so that each request
// sees one revision from its count to its last feature.
type revision struct {
	rev   int
	c     Changes
	empty bool
	n     int // Features
	base  int // Features-Added: revision 0 serves [0, base)
	limit int // no parcel at or above limit is served: base at revision 0, n after
	// deleted lists, sorted, the parcels absent from revision 1 on; nil at revision 0,
	// where they are served.
	deleted []int
	// listed is the revision listings see: the Hidden parcels deleted too; nil when
	// nothing is hidden (listings see this revision).
	listed *revision
	// hideLo and hideHi are the slots a listing leaves out besides the deleted ones
	// ([Deleted+Edited, Deleted+Edited+Hidden) in the listing revision, empty otherwise).
	hideLo, hideHi int
	// Parcel i has slot (i-off)*inv mod base, and slot j is parcel j*mul+off mod base:
	// slots [0, Deleted) are deleted, [Deleted, Deleted+Edited) edited.
	mul, inv, off uint64
}

var errNegativeRevision = errors.New("wfsserver: negative revision")

// Validate returns an error if features parcels cannot hold c: a negative count, Added
// above features, or Edited+Deleted above features-Added.
func (c Changes) Validate(features int) error {
	switch {
	case c.Edited < 0 || c.Deleted < 0 || c.Added < 0 || c.Hidden < 0:
		return fmt.Errorf("wfsserver: negative change counts (edited %d, deleted %d, added %d, hidden %d)", c.Edited, c.Deleted, c.Added, c.Hidden)
	case c.Added > features:
		return fmt.Errorf("wfsserver: %d parcels added, but there are only %d", c.Added, features)
	case c.Edited+c.Deleted+c.Hidden > features-c.Added:
		return fmt.Errorf("wfsserver: %d parcels edited, %d deleted and %d hidden, but revision 0 has only %d", c.Edited, c.Deleted, c.Hidden, features-c.Added)
	}
	return nil
}

func newRevision(rev int, c Changes, empty bool, n int, seed uint64) (*revision, error) {
	if rev < 0 {
		return nil, errNegativeRevision
	}
	if err := c.Validate(n); err != nil {
		return nil, err
	}
	v := &revision{rev: rev, c: c, empty: empty, n: n, base: n - c.Added, mul: 1, inv: 1}
	v.limit = v.base
	if b := uint64(v.base); b > 1 {
		m := uint64(float64(b) * (math.Sqrt(5) - 1) / 2)
		for gcd(int(m), int(b)) != 1 {
			m++
		}
		v.mul, v.inv = m%b, modInverse(m%b, b)
		v.off = mix(seed^0x7265_7669_7369_6f6e) % b
	}
	if rev > 0 {
		v.limit = n
		v.deleted = make([]int, c.Deleted)
		for j := range c.Deleted {
			v.deleted[j] = v.parcel(j)
		}
		sort.Ints(v.deleted)
		if c.Hidden > 0 {
			l := *v
			l.deleted = slices.Clone(v.deleted)
			for j := c.Deleted + c.Edited; j < c.Deleted+c.Edited+c.Hidden; j++ {
				l.deleted = append(l.deleted, v.parcel(j))
			}
			sort.Ints(l.deleted)
			l.hideLo, l.hideHi = c.Deleted+c.Edited, c.Deleted+c.Edited+c.Hidden
			v.listed = &l
		}
	}
	return v, nil
}

// listing is the revision a listing sees: without the Hidden parcels.
func (v *revision) listing() *revision {
	if v.listed != nil {
		return v.listed
	}
	return v
}

// modInverse is a's inverse modulo m, for a coprime to m.
func modInverse(a, m uint64) uint64 {
	t, nt := int64(0), int64(1)
	r, nr := int64(m), int64(a)
	for nr != 0 {
		q := r / nr
		t, nt = nt, t-q*nt
		r, nr = nr, r-q*nr
	}
	if t < 0 {
		t += int64(m)
	}
	return uint64(t)
}

func mulMod(a, b, m uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return bits.Rem64(hi, lo, m)
}

// parcel is the index at slot j.
func (v *revision) parcel(j int) int {
	return int((mulMod(uint64(j), v.mul, uint64(v.base)) + v.off) % uint64(v.base))
}

// slot is parcel i's slot; i must be below base.
func (v *revision) slot(i int) int {
	b := uint64(v.base)
	return int(mulMod((uint64(i)+b-v.off)%b, v.inv, b))
}

// change is what the change set does to parcel i.
func (v *revision) change(i int) Change {
	if i >= v.base {
		return ChangeAdded
	}
	switch j := v.slot(i); {
	case j < v.c.Deleted:
		return ChangeDeleted
	case j < v.c.Deleted+v.c.Edited:
		return ChangeEdited
	}
	return ChangeNone
}

// present reports whether parcel i (0 <= i < n) is served at this revision.
func (v *revision) present(i int) bool {
	if i >= v.limit {
		return false
	}
	if v.rev == 0 || i >= v.base {
		return true
	}
	j := v.slot(i)
	return j >= v.c.Deleted && (j < v.hideLo || j >= v.hideHi)
}

// edit is parcel i's edit at this revision.
func (v *revision) edit(i int) edit {
	if v.rev == 0 || v.c.Edited == 0 || i >= v.base {
		return edit{}
	}
	j := v.slot(i) - v.c.Deleted
	if j < 0 || j >= v.c.Edited {
		return edit{}
	}
	return edit{rev: v.rev, moved: j%2 == 0}
}

// deletedIn counts the deleted parcels in [lo, hi].
func (v *revision) deletedIn(lo, hi int) int {
	if len(v.deleted) == 0 {
		return 0
	}
	return sort.SearchInts(v.deleted, hi+1) - sort.SearchInts(v.deleted, lo)
}

// count is the number of parcels served.
func (v *revision) count() int { return v.limit - len(v.deleted) }

// all yields the parcels served, in index order, from the p-th on.
func (v *revision) all(p int) iter.Seq[int] {
	return func(yield func(int) bool) {
		// The p-th served parcel has k deleted ones below it, k the first with
		// deleted[k]-k > p (deleted[k]-k parcels are served below deleted[k]).
		k := sort.Search(len(v.deleted), func(k int) bool { return v.deleted[k]-k > p })
		for i := p + k; i < v.limit; i++ {
			if k < len(v.deleted) && v.deleted[k] == i {
				k++
				continue
			}
			if !yield(i) {
				return
			}
		}
	}
}

func (s *Server) state() *revision { return s.rev.Load() }

// SetRevision switches the data to revision rev of change set c (see Changes) while the
// server runs; requests under way finish on the revision they started with. Revision 0
// serves the original parcels minus the Added ones; every revision from 1 on serves
// them all minus the Deleted ones, with the Edited ones changed by the revision. It
// returns an error, and changes nothing, for a negative revision or a change set the
// parcels cannot hold (Added above Features, Edited+Deleted above Features-Added). It
// keeps the Empty switch as it is. Safe for concurrent use.
func (s *Server) SetRevision(rev int, c Changes) error {
	s.revMu.Lock()
	defer s.revMu.Unlock()
	v, err := newRevision(rev, c, s.state().empty, s.grid.n, s.grid.seed)
	if err != nil {
		return err
	}
	s.rev.Store(v)
	return nil
}

// Revision returns the current revision and change set.
func (s *Server) Revision() (int, Changes) {
	v := s.state()
	return v.rev, v.c
}

// SetEmpty switches the empty mode: on, every GetFeature, hits and OGC API items query
// answers a valid collection with no features and numberMatched 0, as a misconfigured
// server that suddenly finds nothing does; capabilities and the other documents stay
// as they are, and so do Feature, FeaturesIn, Exists, Count and Indexes, which describe
// the data of the revision. Safe for concurrent use.
func (s *Server) SetEmpty(on bool) {
	s.revMu.Lock()
	defer s.revMu.Unlock()
	v := *s.state()
	v.empty = on
	s.rev.Store(&v)
}

// Empty reports whether the empty mode is on.
func (s *Server) Empty() bool { return s.state().empty }

// Exists reports whether parcel i is served at the current revision; false for an i
// out of range.
func (s *Server) Exists(i int) bool {
	return i >= 0 && i < s.grid.n && s.state().present(i)
}

// Count returns the number of parcels served at the current revision: Len()-Added at
// revision 0, Len()-Deleted after.
func (s *Server) Count() int { return s.state().count() }

// Indexes yields, in index order, the parcels served at the revision current when it is
// called.
func (s *Server) Indexes() iter.Seq[int] { return s.state().all(0) }

// ChangeOf returns what the current change set does to parcel i between revision 0 and
// 1, whatever the current revision. It panics if i is out of range.
func (s *Server) ChangeOf(i int) Change {
	if i < 0 || i >= s.grid.n {
		panic("wfsserver: feature index out of range")
	}
	return s.state().change(i)
}
