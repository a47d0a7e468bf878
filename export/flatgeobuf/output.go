package flatgeobuf

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
)

// writeTo writes the file into w: magic bytes, header, then, when indexed, the tree and
// the features in Hilbert order copied from sp, else the features as spooled.
func (s *spooled) writeTo(ctx context.Context, w *bufio.Writer, sp *os.File, l Layer, o Options) error {
	indexed := !o.NoIndex && len(s.recs) > 0
	if indexed {
		s.sortHilbert()
	}
	if _, err := w.Write(magic[:]); err != nil {
		return fmt.Errorf("writing the header: %w", err)
	}
	if _, err := w.Write(buildHeader(s.header(l, o))); err != nil {
		return fmt.Errorf("writing the header: %w", err)
	}
	if !indexed {
		if _, err := sp.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("reading the spool: %w", err)
		}
		return copyAll(ctx, w, sp)
	}
	if err := s.writeIndex(w, nodeSize); err != nil {
		return fmt.Errorf("writing the index: %w", err)
	}
	return s.copyFeatures(ctx, w, sp)
}

// sortHilbert orders the records by the Hilbert value of their boxes' centres over the
// extent of all, from the highest as GDAL orders them, features without a box last;
// ties keep the order src gave.
func (s *spooled) sortHilbert() {
	for i := range s.recs {
		s.recs[i].hilbert = hilbertValue(s.recs[i].box, s.extent)
	}
	slices.SortFunc(s.recs, func(a, b record) int {
		if ae, be := a.box.empty(), b.box.empty(); ae != be {
			if ae {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.hilbert, a.hilbert), cmp.Compare(a.off, b.off))
	})
}

// writeIndex writes the packed R-tree of the sorted records: the levels above the
// leaves, then a leaf per record with the offset its feature will have.
func (s *spooled) writeIndex(w io.Writer, nodeSize int) error {
	upper := upperLevels(len(s.recs), nodeSize, func(i int) bbox { return s.recs[i].box })
	if err := writeUpperLevels(w, upper); err != nil {
		return err
	}
	buf := make([]byte, 0, 1024*nodeItemSize)
	var off uint64
	for i, r := range s.recs {
		buf = appendNode(buf, r.box, off)
		off += uint64(r.size)
		if len(buf) == cap(buf) || i == len(s.recs)-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// Features are copied from the spool in batches of about copyBatch bytes of output;
// the reads of a batch are made in the spool's order, and features less than readGap
// apart are read with one read, so that features the source gave near each other, as
// they often are (a WFS's pages, a table's order), cost one system call together
// rather than one each.
const (
	copyBatch = 4 << 20
	readGap   = 64 << 10
)

// copyFeatures copies the spooled features into w in the records' order.
func (s *spooled) copyFeatures(ctx context.Context, w io.Writer, sp *os.File) error {
	var out, run []byte
	var byOff []int
	for start := 0; start < len(s.recs); {
		if err := ctx.Err(); err != nil {
			return err
		}
		end, size := start, 0
		for end < len(s.recs) && (end == start || size+int(s.recs[end].size) <= copyBatch) {
			size += int(s.recs[end].size)
			end++
		}
		out = slices.Grow(out[:0], size)[:size]
		byOff = byOff[:0]
		for i := start; i < end; i++ {
			byOff = append(byOff, i)
		}
		slices.SortFunc(byOff, func(a, b int) int { return cmp.Compare(s.recs[a].off, s.recs[b].off) })
		var err error
		if run, err = s.readBatch(sp, start, byOff, out, run); err != nil {
			return err
		}
		if _, err := w.Write(out); err != nil {
			return fmt.Errorf("copying the features: %w", err)
		}
		start = end
	}
	return nil
}

// readBatch reads the features of records byOff (sorted by where they are in the spool)
// into out, each at its place in the records' order from record start, coalescing
// reads of features close together in the spool through run, which it returns to be
// reused.
func (s *spooled) readBatch(sp *os.File, start int, byOff []int, out, run []byte) ([]byte, error) {
	at := make([]int, len(byOff)) // record start+i goes to out[at[i]:]
	pos := 0
	for i := range at {
		at[i] = pos
		pos += int(s.recs[start+i].size)
	}
	for i := 0; i < len(byOff); {
		first := s.recs[byOff[i]].off
		last := first + int64(s.recs[byOff[i]].size)
		j := i + 1
		for j < len(byOff) {
			r := s.recs[byOff[j]]
			if r.off-last > readGap || r.off+int64(r.size)-first > 2*copyBatch {
				break
			}
			last = max(last, r.off+int64(r.size))
			j++
		}
		run = slices.Grow(run[:0], int(last-first))[:last-first]
		if _, err := sp.ReadAt(run, first); err != nil {
			return run, fmt.Errorf("reading features back from the spool: %w", err)
		}
		for _, k := range byOff[i:j] {
			r := s.recs[k]
			copy(out[at[k-start]:], run[r.off-first:r.off-first+int64(r.size)])
		}
		i = j
	}
	return run, nil
}

// copyAll copies what is left of r into w, looking at ctx between chunks.
func copyAll(ctx context.Context, w io.Writer, r io.Reader) error {
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf)
		if _, werr := w.Write(buf[:n]); werr != nil {
			return fmt.Errorf("copying the features: %w", werr)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the spool: %w", err)
		}
	}
}
