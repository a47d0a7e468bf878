package export

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// queryName is what a query's result is called where a table's name would stand.
const queryName = "the query"

// prepareQuery resolves an export of spec.Query: it checks the query is one query
// (store.CheckQuery; the store checks again in its own SQL) and the options a query
// takes, and decides the CRS the features are read in. The columns are known only
// once the query runs (Job.Write).
func prepareQuery(spec Spec, f Format, r Reader) (*Job, error) {
	switch {
	case spec.Table != "" || spec.Changes != nil:
		return nil, errors.New("export: a query is exported instead of a table or changes: give one of them")
	case spec.Where != "":
		return nil, errors.New("export: where selects rows of a table: put the condition in the query")
	case spec.BBox != nil:
		return nil, errors.New("export: a bbox is not applied around a query: put the condition in the query (ST_Intersects on PostGIS; on a GeoPackage, ST_MinX and the like)")
	}
	if err := store.CheckQuery(spec.Query); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	read := spec.SRID
	switch {
	case read < 0:
		return nil, fmt.Errorf("export: srs EPSG:%d is not an EPSG code", read)
	case f == GeoJSONSeq && read != 0 && read != 4326:
		return nil, fmt.Errorf("export: a GeoJSON sequence is in lon/lat (RFC 7946): it cannot be written in EPSG:%d; write .fgb or .gpkg for another CRS", read)
	case f == GeoJSONSeq:
		read = 4326
	}
	return &Job{spec: spec, format: f, srid: read, r: r}, nil
}

// writeQuery writes the query's result into path (the job's own, or a staged one) and
// returns, besides the result, a digest of the layer and of every feature as written.
func (j *Job) writeQuery(ctx context.Context, path string) (Result, string, error) {
	start := time.Now()
	res := Result{Format: j.format, Table: queryName}
	abs, err := filepath.Abs(path)
	if err != nil {
		return res, "", fmt.Errorf("export: %s: %w", path, err)
	}
	res.Path = abs
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return res, "", fmt.Errorf("export: making the directory of %s: %w", abs, err)
	}
	head, src, stop, err := j.querySource(ctx)
	defer stop()
	if err != nil {
		return res, "", fmt.Errorf("export: %s: %w", queryName, err)
	}
	q := *j // the layer of this result; j stays as prepared
	if q.cols, err = queryColumns(head, j.spec.Columns, j.format); err != nil {
		return res, "", err
	}
	q.srid = j.srid
	if q.srid == 0 {
		q.srid = head.SRID
	}
	q.table = store.StoredTable{Name: layerName(j.spec.Path)}
	d := newDigest(q.format, q.table.Name, q.srid, q.cols, src)
	if res.Features, err = q.writeFormat(ctx, abs, d); err != nil {
		return res, "", fmt.Errorf("export: %s to %s: %w", queryName, abs, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return res, "", fmt.Errorf("export: %s: %w", abs, err)
	}
	res.Bytes, res.Elapsed = fi.Size(), time.Since(start)
	return res, hex.EncodeToString(d.h.Sum(nil)), nil
}

// querySource runs the query and returns the description of its result and its
// features, once the store has described it (or failed).
func (j *Job) querySource(ctx context.Context) (store.QueryResult, store.FeatureSource, func(), error) {
	heads := make(chan store.QueryResult, 1)
	q := store.Query{SQL: j.spec.Query, SRID: j.srid}
	src, stop := pull(ctx, func(ctx context.Context, send func(*spatial.Feature) error) error {
		return j.r.QueryFeatures(ctx, q, func(r store.QueryResult) error {
			heads <- r
			return nil
		}, func(f *store.StoredFeature) error { return send(&f.Feature) })
	})
	p := src.(featureSource).p
	select {
	case r := <-heads:
		return r, src, stop, nil
	case <-p.done:
	}
	select {
	case r := <-heads: // described, then ended before the select saw it
		return r, src, stop, nil
	default:
	}
	if p.err == nil {
		return store.QueryResult{}, nil, stop, errors.New("the store ended the query without describing it")
	}
	return store.QueryResult{}, nil, stop, p.err
}

// queryColumns are the columns written of a query's result: those named by want, in
// want's order (nil: all, in the result's order), a GeoPackage's fid and geom renamed
// fid_1 and geom_1. A result without a geometry column is refused: an export writes
// features (GDAL writes such a result to a GeoPackage as a table of attributes, which
// geoflow does not).
func queryColumns(head store.QueryResult, want []string, f Format) ([]store.Column, error) {
	names := make([]string, len(head.Columns))
	for i, c := range head.Columns {
		names[i] = c.Name
	}
	if head.Geometry == "" {
		return nil, fmt.Errorf("export: the query's result has no geometry column (its columns: %s): an export writes features; select a geometry", strings.Join(names, ", "))
	}
	chosen := head.Columns
	if want != nil {
		chosen = nil
		for _, w := range want {
			i := slices.Index(names, w)
			if i < 0 {
				i = slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, w) })
			}
			if i < 0 || slices.ContainsFunc(chosen, func(c store.Column) bool { return c.Name == names[i] }) {
				msg := fmt.Sprintf("export: the query's result has no column %q", w)
				if s := suggest(w, names); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				return nil, fmt.Errorf("%s, or names it twice; its columns: %s (the geometry: %s)", msg, strings.Join(names, ", "), head.Geometry)
			}
			chosen = append(chosen, head.Columns[i])
		}
	}
	cols := make([]store.Column, len(chosen))
	for i, c := range chosen {
		cols[i] = store.Column{Name: c.Name, Property: c.Name, Type: c.Type}
		if f == GeoPackage && (strings.EqualFold(c.Name, "fid") || strings.EqualFold(c.Name, "geom")) {
			cols[i].Name += "_1"
		}
	}
	return cols, nil
}

var notIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// layerName is the layer a query's result is written as: the file's name without its
// extension, made a plain identifier (a GeoPackage's table), or "query".
func layerName(path string) string {
	base := filepath.Base(path)
	name := notIdent.ReplaceAllString(strings.TrimSuffix(base, filepath.Ext(base)), "_")
	name = strings.Trim(name, "_")
	lower := strings.ToLower(name)
	if name == "" || name[0] >= '0' && name[0] <= '9' || len(name) > 63 ||
		strings.HasPrefix(lower, "gpkg_") || strings.HasPrefix(lower, "rtree_") || strings.HasPrefix(lower, "sqlite_") {
		return "query"
	}
	return name
}

// digest is a FeatureSource that hashes what it hands over: the layer first, then each
// feature's geometry (WKB) and its columns' values (JSON), each length-prefixed. Two
// exports with the same digest wrote the same features into the same layer, whatever
// bytes their formats made of them (a GeoPackage records when it was written).
type digest struct {
	src  store.FeatureSource
	cols []store.Column
	h    hash.Hash
	buf  []byte
}

func newDigest(f Format, name string, srid int, cols []store.Column, src store.FeatureSource) *digest {
	d := &digest{src: src, cols: cols, h: sha256.New()}
	b, _ := json.Marshal(struct {
		V       int
		Format  Format
		Name    string
		SRID    int
		Columns []store.Column
	}{1, f, name, srid, cols})
	d.write(b)
	return d
}

// Next implements store.FeatureSource.
func (d *digest) Next() (*spatial.Feature, error) {
	f, err := d.src.Next()
	if err != nil {
		return f, err
	}
	var g []byte
	if f.Geometry != nil {
		if g, err = wkb.Marshal(f.Geometry); err != nil {
			return nil, fmt.Errorf("hashing a geometry: %w", err)
		}
	}
	d.write(g)
	for _, c := range d.cols {
		b, err := json.Marshal(f.Properties[c.Property])
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", c.Property, err)
		}
		d.write(b)
	}
	return f, nil
}

func (d *digest) write(b []byte) {
	d.buf = binary.AppendUvarint(d.buf[:0], uint64(len(b)))
	d.h.Write(d.buf)
	d.h.Write(b)
}

// Staged is an export written beside its file, not yet in its place (Job.Stage):
// Commit puts it there, Discard removes it.
type Staged struct {
	// Result is what was written; its Path is the file it replaces on Commit.
	Result
	// Fingerprint says what the file holds, as Job.Fingerprint does; for a query, whose
	// tables have no stamp, it is made of the query, the options and a digest of the
	// layer and every feature as written.
	Fingerprint string
	tmp         string
}

// Stage writes the export as Write does, but under a temporary name beside spec.Path
// (hidden, with the same extension), and returns it staged: what a task that writes a
// query's result needs to leave an unchanged file as it is (the same inode and
// modification time) rather than replace it.
func (j *Job) Stage(ctx context.Context) (*Staged, error) {
	abs, err := filepath.Abs(j.spec.Path)
	if err != nil {
		return nil, fmt.Errorf("export: %s: %w", j.spec.Path, err)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	base := filepath.Base(abs)
	tmp := filepath.Join(filepath.Dir(abs), "."+base+".staged-"+hex.EncodeToString(suffix[:])+filepath.Ext(base))
	st := &Staged{tmp: tmp}
	if j.spec.Query == "" {
		staged := *j
		staged.spec.Path = tmp
		st.Result, err = staged.Write(ctx)
		st.Fingerprint = j.Fingerprint()
	} else {
		var sum string
		st.Result, sum, err = j.writeQuery(ctx, tmp)
		st.Fingerprint = j.queryFingerprint(sum)
	}
	st.Path = abs
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	return st, nil
}

// queryFingerprint is the fingerprint of a query export whose features had digest sum.
func (j *Job) queryFingerprint(sum string) string {
	b, _ := json.Marshal(struct {
		V       int
		Format  Format
		Query   string
		SRID    int
		Columns []string
		Digest  string
	}{1, j.format, j.spec.Query, j.spec.SRID, j.spec.Columns, sum})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Commit renames the staged file over its place, taking the permissions of the file it
// replaces, and syncs the directory.
func (s *Staged) Commit() error {
	if fi, err := os.Stat(s.Path); err == nil && fi.Mode().IsRegular() {
		_ = os.Chmod(s.tmp, fi.Mode().Perm())
	}
	if err := os.Rename(s.tmp, s.Path); err != nil {
		_ = os.Remove(s.tmp)
		return fmt.Errorf("export: putting %s in place: %w", s.Path, err)
	}
	if d, err := os.Open(filepath.Dir(s.Path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// Discard removes the staged file, leaving the file in its place as it was.
func (s *Staged) Discard() error {
	if err := os.Remove(s.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("export: removing %s: %w", s.tmp, err)
	}
	return nil
}
