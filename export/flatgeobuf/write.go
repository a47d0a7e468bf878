// Package flatgeobuf writes FlatGeobuf files (https://flatgeobuf.org, version 3): one
// layer of features, their properties in typed columns, and a packed Hilbert R-tree that
// lets a reader (GDAL, QGIS, a browser over HTTP ranges) fetch the features of a box
// without reading the rest.
//
// It writes only; geoflow reads FlatGeobuf through GDAL, which tests it.
package flatgeobuf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// Layer describes the one layer of a FlatGeobuf file.
type Layer struct {
	// Name is the layer's name, which readers show (GDAL's layer name); any text.
	Name string
	// SRID is the EPSG code of the geometries' CRS, written as the header's crs (org
	// "EPSG" and the code, which GDAL and QGIS resolve); 0 or less writes no CRS.
	SRID int
	// Columns are the property columns, in order: Name is the column, Property the key
	// in Feature.Properties (defaults to Name), Type how values are written
	// (columnTypeFor). Names must be unique and not empty; at most 65536 columns.
	Columns []store.Column
	// Title and Description are the header's, left out when "".
	Title, Description string
}

// Options tune Write; nil means the defaults.
type Options struct {
	// NoIndex writes no spatial index: the features in the order src yields them.
	NoIndex bool
	// SizeHint is about how many features src will yield, when known (0 when not): what
	// is kept of each is then held in one allocation rather than a growing one, which
	// copies itself as it grows.
	SizeHint int
}

// nodeSize is how many children a node of the index has. The format allows 2 to 65535,
// but GDAL (3.6 at least) reads every index as one of 16, which it writes: another size
// makes the whole file unreadable to it.
const nodeSize = 16

// maxColumns is how many columns a feature's properties can number (a uint16).
const maxColumns = 1 << 16

// Write writes a FlatGeobuf file at path with layer l and the features src yields
// (io.EOF ends), with a packed Hilbert R-tree (node size 16) unless opts.NoIndex, and
// returns how many features it wrote.
//
// The file is complete or absent: it is written as a temporary file in path's directory
// and renamed over path (replacing a file there, whose permissions it takes; else it is
// 0644) only once complete and synced. On any error, ctx's cancellation included, the
// temporary files are removed and path is left as it was.
//
// Features are encoded as src yields them into a second temporary file beside the first
// (the spool), because the header, which comes first, holds their count, extent and
// type, and the index orders them; memory keeps 48 bytes per feature (its box, where it
// is in the spool, its length and its Hilbert value), plus 40 bytes per node of the
// index above its leaves (one per 15 features or so), plus buffers of about 14 MiB
// whatever the count (copyBatch, and reads of up to twice that). The directory needs
// room for the file twice over while it is written.
//
// Each geometry is written as it is (orb.Ring and orb.Bound as polygons) and its
// properties converted to their columns' types; a value that does not fit fails the
// write with a *store.PropertyError. A feature whose geometry is nil or has no
// coordinates is written without one (FlatGeobuf has no empty geometries); the index
// gives it an empty box, which no query intersects. The layer's geometry type is that of
// every geometry, or Unknown for a mix (as FlatGeobuf says it). Z and M are never
// written (orb is 2-D). Feature IDs are not written: FlatGeobuf has none (a reader
// numbers features).
//
// Write reads src from one goroutine. Writes to different paths may run concurrently;
// two to the same path each leave a complete file there, the later rename winning.
func Write(ctx context.Context, path string, l Layer, src store.FeatureSource, opts *Options) (int64, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := checkLayer(l); err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("flatgeobuf: writing %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return 0, fmt.Errorf("flatgeobuf: writing %s: it is a directory", abs)
	}
	dir, base := filepath.Dir(abs), filepath.Base(abs)
	out, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("flatgeobuf: writing %s: creating its temporary file: %w", abs, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = out.Close()
			_ = os.Remove(out.Name())
		}
	}()
	n, err := writeFile(ctx, out, dir, base, l, src, o)
	if err == nil {
		err = finishFile(ctx, out, abs)
	}
	if err != nil {
		return 0, fmt.Errorf("flatgeobuf: writing %s to %s: %w", l.Name, abs, err)
	}
	renamed = true
	syncDir(dir)
	return n, nil
}

// checkLayer refuses a layer whose columns a file cannot hold.
func checkLayer(l Layer) error {
	if len(l.Columns) > maxColumns {
		return fmt.Errorf("flatgeobuf: writing %q: %d columns, more than %d", l.Name, len(l.Columns), maxColumns)
	}
	seen := map[string]bool{}
	for i, c := range l.Columns {
		if c.Name == "" {
			return fmt.Errorf("flatgeobuf: writing %q: column %d has no name", l.Name, i+1)
		}
		if seen[strings.ToLower(c.Name)] {
			return fmt.Errorf("flatgeobuf: writing %q: column %q is there twice (names ignore case)", l.Name, c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
	}
	return nil
}

// writeFile spools src's features (spool), then writes the whole file into out: the
// header, the index and the features, and flushes it. The spool is a temporary file in
// dir, removed before writeFile returns.
func writeFile(ctx context.Context, out *os.File, dir, base string, l Layer, src store.FeatureSource, o Options) (int64, error) {
	sp, err := os.CreateTemp(dir, "."+base+".*.spool")
	if err != nil {
		return 0, fmt.Errorf("creating the spool: %w", err)
	}
	defer func() {
		_ = sp.Close()
		_ = os.Remove(sp.Name())
	}()
	s, err := spool(ctx, sp, l, src, o.SizeHint)
	if err != nil {
		return s.count(), err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if err := s.writeTo(ctx, w, sp, l, o); err != nil {
		return s.count(), err
	}
	if err := w.Flush(); err != nil {
		return s.count(), fmt.Errorf("writing the file: %w", err)
	}
	return s.count(), nil
}

// finishFile makes the complete file out the file at path: its permissions, synced,
// closed and renamed; ctx is looked at last before the rename.
func finishFile(ctx context.Context, out *os.File, path string) error {
	if err := out.Chmod(fileMode(path)); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("syncing the file: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("closing the file: %w", err)
	}
	if err := ctx.Err(); err != nil { // the last moment path can be left as it was
		return err
	}
	if err := os.Rename(out.Name(), path); err != nil {
		return fmt.Errorf("moving the file into place: %w", err)
	}
	return nil
}

// fileMode is the permissions a file written to path gets: those of the file it
// replaces, else 0644 (a temporary file is made 0600).
func fileMode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return 0o644
}

// syncDir flushes dir, so that a rename in it lasts. It is best effort: the file is in
// place whatever it answers, and some systems cannot sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// record is what Write keeps of each spooled feature: 48 bytes.
type record struct {
	box     bbox
	off     int64  // where its size-prefixed Feature starts in the spool
	size    uint32 // its bytes, the size prefix included
	hilbert uint32 // the Hilbert value of its box's centre, once sorted
}

// spooled is what spool learnt of the features.
type spooled struct {
	recs   []record
	extent bbox
	typ    geometryType
	seen   bool // a geometry has been seen (typ means something)
}

func (s *spooled) count() int64 { return int64(len(s.recs)) }

// spool encodes each feature src yields as a size-prefixed Feature table into sp, and
// returns what the header and the index need of them.
func spool(ctx context.Context, sp *os.File, l Layer, src store.FeatureSource, hint int) (*spooled, error) {
	s := &spooled{extent: emptyBox, recs: make([]record, 0, max(hint, 0))}
	w := bufio.NewWriterSize(sp, 1<<20)
	next := encodeNext(src, newFeatureEncoder(l))
	var off int64
	for {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		b, box, g, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		n := s.count() + 1
		var se sourceError
		if errors.As(err, &se) {
			return s, fmt.Errorf("reading feature #%d: %w", n, se.err)
		}
		if err != nil {
			return s, fmt.Errorf("feature #%d: %w", n, err)
		}
		if _, err := w.Write(b); err != nil {
			return s, fmt.Errorf("spooling feature #%d: %w", n, err)
		}
		s.recs = append(s.recs, record{box: box, off: off, size: uint32(len(b))})
		off += int64(len(b))
		s.extent.union(box)
		s.typ, s.seen = layerType(s.typ, s.seen, g)
	}
	if err := w.Flush(); err != nil {
		return s, fmt.Errorf("spooling: %w", err)
	}
	return s, nil
}

// encodeNext returns a function that encodes src's next feature and returns it, its
// box and its geometry; io.EOF at the end. A store.RowSource is read by rows (NextRow),
// which spares a map per feature.
func encodeNext(src store.FeatureSource, enc *featureEncoder) func() ([]byte, bbox, orb.Geometry, error) {
	if rs, ok := src.(store.RowSource); ok {
		return func() ([]byte, bbox, orb.Geometry, error) {
			r, err := rs.NextRow()
			if err != nil {
				return nil, emptyBox, nil, readError(err)
			}
			if r == nil {
				return nil, emptyBox, nil, errNoFeature
			}
			b, box, err := enc.encodeRow(r)
			return b, box, r.Geometry, err
		}
	}
	return func() ([]byte, bbox, orb.Geometry, error) {
		f, err := src.Next()
		if err != nil {
			return nil, emptyBox, nil, readError(err)
		}
		if f == nil {
			return nil, emptyBox, nil, errNoFeature
		}
		b, box, err := enc.encode(f)
		return b, box, f.Geometry, err
	}
}

// errNoFeature is a source's fault: neither a feature nor an error.
var errNoFeature = sourceError{errors.New("the source gave no feature and no error")}

// sourceError is an error of reading the source, rather than of encoding a feature.
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }
func (e sourceError) Unwrap() error { return e.err }

// readError is err from a source: io.EOF as it is, else a sourceError.
func readError(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return sourceError{err}
}

// header is the file's header for these features.
func (s *spooled) header(l Layer, o Options) header {
	h := header{
		name: l.Name, title: l.Title, description: l.Description,
		geometryType: s.typ, featuresCount: uint64(len(s.recs)), srid: l.SRID,
	}
	if !s.extent.empty() {
		h.envelope = &[4]float64{s.extent.minX, s.extent.minY, s.extent.maxX, s.extent.maxY}
	}
	if !o.NoIndex && len(s.recs) > 0 {
		h.indexNodeSize = nodeSize
	}
	for _, c := range l.Columns {
		h.columns = append(h.columns, column{name: c.Name, typ: columnTypeFor(c.Type)})
	}
	return h
}
