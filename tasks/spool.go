package tasks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/geoflow/geoflow/store"
)

// spoolMemory is how much of a response a Spool keeps in memory before it moves to a
// temporary file: a page of 1,000 parcels as GeoJSON is about 1.5 MiB, so pages stay in
// memory and only unusual ones (huge geometries, large page sizes) touch the disk.
const spoolMemory = 8 << 20

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Spool holds one response body, read off the network in full before the unit's
// transaction opens: no database connection ever waits on a slow server, the HTTP timeout
// covers only the transfer, and a unit whose write fails on a database fault is written
// again from the spool without asking the server twice. Bodies up to 8 MiB stay in
// memory (buffers are reused across units), larger ones go to a temporary file.
// A Spool is used by one goroutine at a time; Close releases it.
type Spool struct {
	buf  *bytes.Buffer
	file *os.File
	n    int64
}

// NewSpool returns an empty spool.
func NewSpool() *Spool {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return &Spool{buf: b}
}

// ReadFrom reads r to its end into the spool. An error reading r is returned as it is,
// so the rate-limit handler classifies a body cut off mid-stream; a failure to write the
// temporary file is a *store.Fault (the disk's, not the server's).
func (s *Spool) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for s.file == nil {
		n, err := s.buf.ReadFrom(io.LimitReader(r, spoolMemory+1-int64(s.buf.Len())))
		total += n
		s.n += n
		if err != nil {
			return total, err
		}
		if s.buf.Len() <= spoolMemory {
			return total, nil // the body ended within the memory limit
		}
		if err := s.toFile(); err != nil {
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
	if s.file == nil && s.buf.Len()+len(p) > spoolMemory {
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
	n, _ := s.buf.Write(p)
	s.n += int64(n)
	return n, nil
}

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

func (s *Spool) toFile() error {
	f, err := os.CreateTemp("", "geoflow-spool-*")
	if err != nil {
		return store.DiskFault("spooling a response", err)
	}
	_ = os.Remove(f.Name()) // unlinked at once: nothing is left behind by a crash
	if _, err := f.Write(s.buf.Bytes()); err != nil {
		f.Close()
		return store.DiskFault("spooling a response", err)
	}
	s.file = f
	s.buf.Reset()
	return nil
}

// Len is the number of bytes spooled.
func (s *Spool) Len() int64 { return s.n }

// Bytes returns the spooled body when it is held in memory, else nil.
func (s *Spool) Bytes() []byte {
	if s.file != nil {
		return nil
	}
	return s.buf.Bytes()
}

// Reader returns a reader over the whole body, from its start; each call starts again.
func (s *Spool) Reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.buf.Bytes()), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, store.DiskFault("reading a spooled response", err)
	}
	return io.NewSectionReader(s.file, 0, s.n), nil
}

// Close releases the spool's memory and file. It is safe to call more than once, and
// on a nil *Spool.
func (s *Spool) Close() {
	if s == nil {
		return
	}
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	if s.buf != nil {
		if s.buf.Cap() <= 2*spoolMemory {
			bufPool.Put(s.buf)
		}
		s.buf = nil
	}
}

func (s *Spool) String() string { return fmt.Sprintf("spool of %d bytes", s.n) }
