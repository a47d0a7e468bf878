package tasks

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/geoflow/geoflow/spatial"
)

// DefaultMemoryLimit is the memory budget of a run when neither geoflow run
// --memory-limit nor the flow's memory_limit sets one: 1 GiB. It is the smallest round
// budget in which one feature at the default per-feature limits (128 MiB of text, five
// million vertices: about 600 MB to decode and write, see featureCost) fits beside the
// responses spooled in memory; an ordinary harvest uses a few tens of MB of it.
const DefaultMemoryLimit = 1 << 30

// MinMemoryLimit is the smallest budget accepted: below it not even the ordinary
// features of a few units at once fit.
const MinMemoryLimit = 64 << 20

// Memory is the one budget in bytes that the responses, spools and decoded features of
// a run's units in flight draw on: a unit waits for budget instead of the process
// growing. It is shared by every task of a run; a nil *Memory is no budget (nothing is
// counted, nothing waits). Safe for concurrent use.
//
// Why it cannot deadlock. A unit holds budget in two ways, and only one of them ever
// waits:
//   - A response's bytes kept in memory (a Spool's chunks) are taken without waiting:
//     when the budget has no room, or spools together already hold a quarter of it, the
//     spool moves to its temporary file instead. Spools hold at most that quarter, and
//     never wait.
//   - A decoded feature is charged, before it is decoded, with what it may cost at most
//     (featureCost of the bytes it may span), from the rest of the budget. A reader
//     charges a small claim that covers any ordinary feature when it starts reading;
//     once a feature's text outgrows the claim, the reader releases it and then waits
//     for the worst case of that feature in one piece: it never waits while holding a
//     feature claim others wait for. Every feature claim is held by a unit that is
//     decoding or writing, which waits for nothing the waiters hold, and is released
//     when its feature is written (the next feature starts) or its spool is closed.
//
// So a waiting unit always gets its claim once the units ahead of it have written their
// feature: claims are capped at the feature share (three quarters of the budget), which
// the spools cannot take. What a waiting unit holds unaccounted is the small claim it
// gave back (smallFeature's cost, a few MB). A feature whose worst case exceeds the
// feature share fails its unit as too_large, naming memory_limit.
type Memory struct {
	limit int64
	sem   *semaphore.Weighted
	// spooled is what spools hold in memory, at most spoolShare.
	spooled atomic.Int64

	inUse, peak, waits, waitNanos, spilled atomic.Int64
}

// NewMemory returns a budget of limit bytes; a limit of zero or less is
// DefaultMemoryLimit.
func NewMemory(limit int64) *Memory {
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	return &Memory{limit: limit, sem: semaphore.NewWeighted(limit)}
}

// Limit is the budget in bytes.
func (m *Memory) Limit() int64 { return m.limit }

// spoolShare is the most the spools of all units may hold in memory together.
func (m *Memory) spoolShare() int64 { return m.limit / 4 }

// featureShare is the most one feature may be charged: what the spools cannot take.
func (m *Memory) featureShare() int64 { return m.limit - m.spoolShare() }

// MemoryStats is what a budget saw.
type MemoryStats struct {
	Limit int64 // the budget in bytes
	InUse int64 // charged now
	Peak  int64 // the most charged at once
	// Waits counts the times a unit waited for budget, and Waited is how long they
	// waited in all.
	Waits  int64
	Waited time.Duration
	// Spilled counts the responses that went to a temporary file early because the
	// budget had no room for them in memory.
	Spilled int64
}

// Stats returns what the budget saw so far; the zero MemoryStats for a nil *Memory.
func (m *Memory) Stats() MemoryStats {
	if m == nil {
		return MemoryStats{}
	}
	return MemoryStats{Limit: m.limit, InUse: m.inUse.Load(), Peak: m.peak.Load(),
		Waits: m.waits.Load(), Waited: time.Duration(m.waitNanos.Load()), Spilled: m.spilled.Load()}
}

func (m *Memory) charged(n int64) {
	v := m.inUse.Add(n)
	for p := m.peak.Load(); v > p && !m.peak.CompareAndSwap(p, v); p = m.peak.Load() {
	}
}

// tryAcquire takes n bytes if they are free at once.
func (m *Memory) tryAcquire(n int64) bool {
	if !m.sem.TryAcquire(n) {
		return false
	}
	m.charged(n)
	return true
}

// acquire takes n bytes, waiting for them. The caller must hold no claim of its own
// that others could be waiting for (see Memory). The wait has no context: it ends,
// since every claim ahead of it is held by a unit that is writing and will release it;
// a run being stopped lets those units end.
func (m *Memory) acquire(n int64) error {
	if m.tryAcquire(n) {
		return nil
	}
	t0 := time.Now()
	if err := m.sem.Acquire(context.Background(), n); err != nil {
		return fmt.Errorf("waiting for %d bytes of the memory budget: %w", n, err)
	}
	m.waits.Add(1)
	m.waitNanos.Add(int64(time.Since(t0)))
	m.charged(n)
	return nil
}

func (m *Memory) release(n int64) {
	if n > 0 {
		m.charged(-n)
		m.sem.Release(n)
	}
}

// takeSpool takes n bytes for a spool's memory, without waiting; false means the spool
// goes to its file instead.
func (m *Memory) takeSpool(n int64) bool {
	if m.spooled.Add(n) > m.spoolShare() || !m.tryAcquire(n) {
		m.spooled.Add(-n)
		return false
	}
	return true
}

func (m *Memory) releaseSpool(n int64) {
	if n > 0 {
		m.spooled.Add(-n)
		m.release(n)
	}
}

// MemoryLimitError is a feature that may need more memory than the budget can ever give
// one feature. It matches spatial.ErrTooLarge, so the unit fails as too_large, for good
// (the server sends the same feature again).
type MemoryLimitError struct {
	Text    int64 // the feature's text read when it was refused, in bytes
	Covered int64 // the most text Share covers
	Need    int64 // what the feature may cost at most, in bytes (featureCost)
	Share   int64 // the most one feature may be charged (three quarters of Limit)
	Limit   int64 // the budget: memory_limit
}

func (e *MemoryLimitError) Error() string {
	return fmt.Sprintf("too large for the memory budget: a feature passed %d MiB of text, more than the %d MiB one feature may take of memory_limit %d MiB covers (%d MiB); it may need up to %d MiB to decode and store: raise memory_limit (the flow's key, or geoflow run --memory-limit)",
		e.Text>>20, e.Share>>20, e.Limit>>20, e.Covered>>20, e.Need>>20)
}

// Is makes errors.Is(err, spatial.ErrTooLarge) true.
func (e *MemoryLimitError) Is(target error) bool { return target == spatial.ErrTooLarge }

// smallFeature is the text a reader's first claim covers: any ordinary feature (a parcel
// is 2 KB, a detailed county boundary a few hundred KB).
const smallFeature = 256 << 10

// featureCost is the most decoding and storing a feature of b bytes of text may take:
// the reader's window holding its text (twice b, as the window grows by doubling) and 64
// bytes a vertex for as many vertices as the text can hold at 6 bytes each ("[1,2],"),
// up to lim.Vertices: each decoded at 16 bytes into the reader's scratch, its geometry,
// the geometry's WKB and the store's COPY buffer. Measured on 4,990,000-vertex lines of
// 110 MB, a harvest peaks at about 500 MB of heap for one such feature.
func featureCost(b int64, lim spatial.Limits) int64 {
	lim = lim.OrDefault()
	v := min(b/6+1, int64(lim.Vertices))
	return 2*b + 64*v
}

// featureClaim charges a reader's features to a budget as their text is read: Read
// calls add to the bytes of the current feature, start begins the next one.
type featureClaim struct {
	m    *Memory
	lim  spatial.Limits
	held int64 // charged
	// seen is the text read of the current feature, covered how much text held covers.
	seen, covered int64
	// rest is what the response has left after what was read, -1 when unknown (a
	// response still arriving).
	rest func() int64
}

// start begins a feature: what the previous one held beyond the small claim is released
// (it is written by now).
func (c *featureClaim) start(lim spatial.Limits) {
	c.lim = lim.OrDefault()
	c.seen = 0
	if small := featureCost(smallFeature, c.lim); c.held > small {
		c.m.release(c.held - small)
		c.held, c.covered = small, smallFeature
	}
}

// read charges n more bytes of the current feature's text, waiting for budget when the
// feature outgrows its claim.
func (c *featureClaim) read(n int) error {
	if c.m == nil {
		return nil
	}
	c.seen += int64(n)
	if c.seen <= c.covered {
		return nil
	}
	lim := c.lim.OrDefault()
	text := int64(smallFeature)
	if c.held > 0 || c.seen > smallFeature {
		// Past the small claim: the feature may span its whole limit, or the rest of
		// the response where that is known.
		text = lim.FeatureBytes
		if r := c.rest(); r >= 0 {
			text = min(text, c.seen+r)
		}
	}
	if c.seen > text {
		text = c.seen + c.seen/2 // beyond its limit: the reader refuses it shortly
	}
	need, share := featureCost(text, lim), c.m.featureShare()
	if need > share {
		// The feature may be smaller than the most it could be: claim the share, and
		// fail only once its text is more than the share can cover.
		worst := need
		text, need = coveredBy(share, lim), share
		if seen := c.seen; seen > text {
			c.close()
			return &MemoryLimitError{Text: seen, Covered: text, Need: worst, Share: share, Limit: c.m.limit}
		}
	}
	// Release first, then wait for the whole claim in one piece.
	c.m.release(c.held)
	c.held, c.covered = 0, 0
	if err := c.m.acquire(need); err != nil {
		return err
	}
	c.held, c.covered = need, text
	return nil
}

// coveredBy is the most text whose featureCost is within budget.
func coveredBy(budget int64, lim spatial.Limits) int64 {
	lo, hi := int64(0), budget/2
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if featureCost(mid, lim) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// close releases what the claim holds.
func (c *featureClaim) close() {
	if c.m != nil {
		c.m.release(c.held)
	}
	c.held, c.covered, c.seen = 0, 0, 0
}

// CheckMemoryLimit reports a budget too small to run with.
func CheckMemoryLimit(n int64) error {
	if n < MinMemoryLimit {
		return fmt.Errorf("%d bytes is below the smallest budget, %d MiB (the default is %d MiB)", n, MinMemoryLimit>>20, DefaultMemoryLimit>>20)
	}
	return nil
}

// Meter returns a reader of r whose features a decoder reading it charges to the run's
// memory budget, as a spool's do, and a func that ends the charge (call it once the
// decoder is done). It is for responses decoded as they arrive without a spool (a
// count asked with a page of one feature, a sample of features). Without a budget r is
// returned as it is.
func (e *Env) Meter(r io.Reader) (io.Reader, func()) {
	if e == nil || e.Memory == nil {
		return r, func() {}
	}
	m := &meter{r: r, claim: featureClaim{m: e.Memory, rest: unknownRest}}
	return m, m.claim.close
}

// meter charges what a decoder reads of a response to the budget, feature by feature.
type meter struct {
	r     io.Reader
	claim featureClaim
}

// Read implements io.Reader.
func (m *meter) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	if n > 0 {
		if cerr := m.claim.read(n); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// StartFeature implements spatial.FeatureMeter.
func (m *meter) StartFeature(lim spatial.Limits) { m.claim.start(lim) }
