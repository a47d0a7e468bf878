package tasks

import (
	"errors"
	"io"
	"os"
	"sync"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

const (
	// spoolMemory is how much of a response a Spool keeps in memory before it moves to a
	// temporary file: a page of 1,000 parcels as GeoJSON is about 1.7 MiB, so pages stay in
	// memory and only unusual ones (huge geometries, large page sizes) touch the disk.
	spoolMemory = 8 << 20
	// chunkSize is the grain of a spool's memory: chunks are reused across units, and a
	// body takes what it needs to the next 64 KiB, never a doubled buffer's slack.
	chunkSize = 64 << 10
)

var chunks = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize); return &b }}

// Spool holds one response body, read off the network in full before the unit's
// transaction opens: no database connection ever waits on a slow server, the HTTP timeout
// covers only the transfer, and a unit whose write fails on a database fault is written
// again from the spool without asking the server twice. Bodies up to 8 MiB stay in
// memory, in pooled 64 KiB chunks; larger ones go to a temporary file, unlinked at once.
// A Spool is used by one goroutine at a time; Close releases it.
//
// A spool made by Env.NewSpool draws on the run's memory budget (see Memory): its chunks
// are taken from the budget's spool share without waiting (a spool that finds no room
// goes to its file at once), and the features a reader decodes of it are charged as the
// reader reads them: through Tee while the response arrives, through Reader afterwards.
type Spool struct {
	mem   []*[]byte // chunks in order; all full but the last
	file  *os.File
	n     int64
	m     *Memory // nil: no budget
	taken int64   // bytes of chunks taken from m
	claim featureClaim
}

func newSpool(m *Memory) *Spool {
	return &Spool{m: m, claim: featureClaim{m: m, rest: unknownRest}}
}

// unknownRest is the rest of a response still arriving.
func unknownRest() int64 { return -1 }

// NewSpool returns an empty spool drawing on the run's memory budget (none on a nil
// Env, or one without a budget).
func (e *Env) NewSpool() *Spool {
	if e == nil {
		return newSpool(nil)
	}
	return newSpool(e.Memory)
}

// last returns a chunk with room to write into, taking a new one when the last is full;
// nil when the budget has no room for another (the spool must go to its file).
func (s *Spool) last() *[]byte {
	if len(s.mem) > 0 {
		if c := s.mem[len(s.mem)-1]; len(*c) < cap(*c) {
			return c
		}
	}
	if !s.prepay(chunkSize) {
		return nil
	}
	c := chunks.Get().(*[]byte)
	*c = (*c)[:0]
	s.mem = append(s.mem, c)
	return c
}

// prepay makes sure n more bytes fit in chunks taken from the budget (taken covers every
// chunk allocated, and those about to be): false when the budget has no room for them.
func (s *Spool) prepay(n int64) bool {
	if s.m == nil {
		return true
	}
	var room int64
	if k := len(s.mem); k > 0 {
		room = int64(cap(*s.mem[k-1]) - len(*s.mem[k-1]))
	}
	allocated := int64(len(s.mem)) * chunkSize
	need := allocated + (max(n-room, 0)+chunkSize-1)/chunkSize*chunkSize
	if need <= s.taken {
		return true
	}
	if !s.m.takeSpool(need - s.taken) {
		s.m.spilled.Add(1)
		return false
	}
	s.taken = need
	return true
}

// ReadFrom reads r to its end into the spool. An error reading r is returned as it is,
// so the rate-limit handler classifies a body cut off mid-stream; a failure to write the
// temporary file is a *store.Fault (the disk's, not the server's).
func (s *Spool) ReadFrom(r io.Reader) (int64, error) {
	// A reader decoding the response's head through Tee is done with it.
	s.claim.close()
	var total int64
	for s.file == nil {
		var c *[]byte
		if s.n < spoolMemory {
			c = s.last()
		}
		if c == nil {
			if err := s.toFile(); err != nil {
				return total, err
			}
			break
		}
		n, err := r.Read((*c)[len(*c):cap(*c)])
		*c = (*c)[:len(*c)+n]
		total += int64(n)
		s.n += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
	n, err := io.Copy(fileWriter{s.file}, r)
	total += n
	s.n += n
	var we *writeError
	if errors.As(err, &we) {
		return total, store.DiskFault("spooling a response", we.err)
	}
	return total, err
}

// Write appends p, for an io.TeeReader that spools what a decoder reads of a response's
// head. A failure of the spool's file is a *store.Fault.
func (s *Spool) Write(p []byte) (int, error) {
	// The decoder reading the head reads what is written here: its feature is charged.
	if err := s.claim.read(len(p)); err != nil {
		return 0, err
	}
	if s.file == nil && s.n+int64(len(p)) > spoolMemory {
		if err := s.toFile(); err != nil {
			return 0, err
		}
	}
	if s.file == nil && !s.prepay(int64(len(p))) {
		if err := s.toFile(); err != nil {
			return 0, err
		}
	}
	if s.file != nil {
		n, err := s.file.Write(p)
		s.n += int64(n)
		if err != nil {
			return n, store.DiskFault("spooling a response", err)
		}
		return n, nil
	}
	written := len(p)
	for len(p) > 0 {
		c := s.last()
		k := copy((*c)[len(*c):cap(*c)], p)
		*c = (*c)[:len(*c)+k]
		p = p[k:]
	}
	s.n += int64(written)
	return written, nil
}

// Tee returns a reader of r that spools what is read of it, for a decoder reading a
// response's head as it arrives. It implements spatial.FeatureMeter: the decoder's
// features are charged to the budget with its limits (until then, with the defaults),
// and ReadFrom, which spools the rest, ends the charge.
func (s *Spool) Tee(r io.Reader) io.Reader {
	return &teeReader{r: r, s: s}
}

type teeReader struct {
	r io.Reader
	s *Spool
}

// Read implements io.Reader.
func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		if n, err := t.s.Write(p[:n]); err != nil {
			return n, err
		}
	}
	return n, err
}

// StartFeature implements spatial.FeatureMeter.
func (t *teeReader) StartFeature(lim spatial.Limits) { t.s.claim.start(lim) }

// writeError marks an error of the spool's file, as opposed to the body's.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

type fileWriter struct{ f *os.File }

func (w fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

// toFile moves what is in memory to a temporary file, where the rest goes.
func (s *Spool) toFile() error {
	f, err := os.CreateTemp("", "geoflow-spool-*")
	if err != nil {
		return store.DiskFault("spooling a response", err)
	}
	_ = os.Remove(f.Name()) // unlinked at once: nothing is left behind by a crash
	for _, c := range s.mem {
		if _, err := f.Write(*c); err != nil {
			f.Close()
			return store.DiskFault("spooling a response", err)
		}
	}
	s.file = f
	s.release()
	return nil
}

// Len is the number of bytes spooled.
func (s *Spool) Len() int64 { return s.n }

// Reader returns a reader over the whole body, from its start; each call starts again,
// and ends what an earlier reader's features held of the budget. The reader implements
// spatial.FeatureMeter: a decoder reading it has its features charged to the budget.
func (s *Spool) Reader() (io.Reader, error) {
	s.claim.close()
	var r io.Reader = io.NewSectionReader(s.file, 0, s.n)
	if s.file == nil {
		r = &chunkReader{chunks: s.mem}
	}
	if s.m == nil {
		return r, nil
	}
	mr := &meteredReader{r: r, claim: &s.claim, left: s.n}
	s.claim.rest = func() int64 { return mr.left }
	return mr, nil
}

// meteredReader charges what a decoder reads of a spool to the budget, feature by
// feature, from the first feature's start on (a reader that never starts a feature, one
// copying the body, say, is not charged).
type meteredReader struct {
	r       io.Reader
	claim   *featureClaim
	left    int64 // bytes not read yet
	started bool
}

// Read implements io.Reader; it waits for budget when the feature being read outgrows
// what it holds, and fails with a *MemoryLimitError when it can never have it.
func (m *meteredReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.left -= int64(n)
	if n > 0 && m.started {
		if cerr := m.claim.read(n); cerr != nil {
			return n, cerr
		}
	}
	return n, err
}

// StartFeature implements spatial.FeatureMeter.
func (m *meteredReader) StartFeature(lim spatial.Limits) {
	m.started = true
	m.claim.start(lim)
}

// chunkReader reads a spool's chunks in order.
type chunkReader struct {
	chunks []*[]byte
	off    int // in chunks[0]
}

// Read fills p across chunk boundaries, as a reader over one buffer would: a decoder
// refilling its window from a spool gets whole windows, not the ends of chunks (which
// cost it a refill, and a move of what it holds, each time).
func (r *chunkReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.chunks) > 0 {
		k := copy(p[n:], (*r.chunks[0])[r.off:])
		n += k
		if r.off += k; r.off == len(*r.chunks[0]) {
			r.chunks, r.off = r.chunks[1:], 0
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (s *Spool) release() {
	for _, c := range s.mem {
		chunks.Put(c)
	}
	s.mem = nil
	if s.m != nil {
		s.m.releaseSpool(s.taken)
		s.taken = 0
	}
}

// Close releases the spool's memory and file. It is safe to call more than once, and
// on a nil *Spool. Readers from Reader must not be used afterwards.
func (s *Spool) Close() {
	if s == nil {
		return
	}
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	s.release()
	s.claim.close()
}
