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

// ctxEvery is how many features are copied between looks at the context.
const ctxEvery = 4096

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

// copyFeatures copies the spooled features into w in the records' order.
func (s *spooled) copyFeatures(ctx context.Context, w io.Writer, sp *os.File) error {
	var buf []byte
	for i, r := range s.recs {
		if i%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		buf = slices.Grow(buf[:0], int(r.size))[:r.size]
		if _, err := sp.ReadAt(buf, r.off); err != nil {
			return fmt.Errorf("reading feature #%d back from the spool: %w", i+1, err)
		}
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("copying the features: %w", err)
		}
	}
	return nil
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
