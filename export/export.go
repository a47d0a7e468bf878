// Package export writes a stored table, or the changes a run made to one, as a file GIS
// tools read: a GeoPackage (store/gpkg's Export), a FlatGeobuf (export/flatgeobuf) or a
// GeoJSON text sequence (export/geojsonseq). It reads through the store's own seam
// (store.Tables, store.Changes), streaming, and every format writes its file
// atomically: a temporary file in the target's directory, synced and renamed over it,
// so that a reader never sees half a file and a failure leaves the old one.
//
// Prepare resolves a Spec against the store (the table, its columns, the CRS) into a
// Job whose Fingerprint says what the file will hold; Job.Write writes it. Write does
// both.
package export

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/export/flatgeobuf"
	"github.com/geoflow/geoflow/export/geojsonseq"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// Format is a file format an export writes.
type Format string

// The formats.
const (
	GeoPackage Format = "gpkg"       // OGC GeoPackage: one feature table, its R-tree
	FlatGeobuf Format = "fgb"        // FlatGeobuf 3 with a packed Hilbert R-tree
	GeoJSONSeq Format = "geojsonseq" // GeoJSON text sequence (RFC 8142, or newline-delimited)
)

// formatNames are the names ParseFormat takes, and the extensions FormatOf knows.
var (
	formatNames = map[string]Format{"gpkg": GeoPackage, "geopackage": GeoPackage, "fgb": FlatGeobuf,
		"flatgeobuf": FlatGeobuf, "geojsonseq": GeoJSONSeq, "geojsons": GeoJSONSeq, "geojsonl": GeoJSONSeq}
	extensions = map[string]Format{".gpkg": GeoPackage, ".fgb": FlatGeobuf, ".geojsons": GeoJSONSeq, ".geojsonl": GeoJSONSeq}
)

// ParseFormat is the format named s (gpkg or geopackage, fgb or flatgeobuf, geojsonseq,
// geojsons or geojsonl; any case); "" is "" (from the file's extension).
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return "", nil
	}
	if f, ok := formatNames[strings.ToLower(strings.TrimSpace(s))]; ok {
		return f, nil
	}
	return "", fmt.Errorf("export: unknown format %q: want gpkg, fgb or geojsonseq", s)
}

// FormatOf is the format of a file named path: f when not "", else its extension's
// (.gpkg, .fgb, .geojsons, .geojsonl; any case).
func FormatOf(path string, f Format) (Format, error) {
	if f != "" {
		return ParseFormat(string(f))
	}
	ext := strings.ToLower(filepath.Ext(path))
	if f, ok := extensions[ext]; ok {
		return f, nil
	}
	return "", fmt.Errorf("export: %s: no format for the extension %q: name the file .gpkg, .fgb, .geojsons or .geojsonl, or give the format", path, ext)
}

// Spec is what to export, and where.
type Spec struct {
	// Table is the stored table, [schema.]table; "" with Changes takes the table the
	// changes were made to.
	Table string
	// Path is the file written; its directory must exist.
	Path string
	// Format is the file's format; "" takes it from Path's extension (FormatOf).
	Format Format
	// BBox, lon/lat, keeps the features whose geometry meets it; nil keeps all.
	BBox *orb.Bound
	// SRID is the EPSG code of the CRS written; 0 writes the table's own. A GeoJSON
	// sequence is always lon/lat (RFC 7946): 0 or 4326.
	SRID int
	// Columns are the table's columns written, in this order; nil writes every one.
	Columns []string
	// Where is a boolean expression in the store's own SQL that keeps the rows it holds
	// for (store.FeatureQuery.Where); "" keeps all.
	Where string
	// Changes, when not nil, exports what a run changed in the table rather than the
	// table: each inserted, updated and deleted feature as the run left it (a deleted one
	// as it was), with gf_change and gf_key.
	Changes *Changes
	// Query, when not "", exports the result of this SQL query rather than a table: one
	// SELECT in the store's own SQL (store.Queries), run read-only, whose one geometry
	// column is written as the features' geometry and its other columns as their
	// properties (Columns chooses among them; Where and BBox are refused: the query says
	// which rows). The layer is named after the file.
	Query string
}

// Changes selects the changes of one run, by one task ("" for any).
type Changes struct {
	RunID int64
	Task  string
}

// Reader is what an export reads of the store.
type Reader interface {
	store.Tables
	store.Changes
	store.Queries
}

// Job is a resolved export, ready to write.
type Job struct {
	spec   Spec
	format Format
	table  store.StoredTable // the zero StoredTable for changes of no table
	cols   []store.Column    // the layer's columns, gf_feature_id and gf_change included
	srid   int               // the CRS written, and read (0: lon/lat, unknown)
	query  store.FeatureQuery
	r      Reader
}

// Result is what an export wrote.
type Result struct {
	Path     string // absolute
	Format   Format
	Table    string // schema.table, or "the query"
	Features int64
	Bytes    int64
	Elapsed  time.Duration
}

// Write exports spec's features into spec.Path: Prepare, then Job.Write.
func Write(ctx context.Context, spec Spec, r Reader) (Result, error) {
	j, err := Prepare(ctx, spec, r)
	if err != nil {
		return Result{}, err
	}
	return j.Write(ctx)
}

// Fingerprint is a digest of what the file will hold: the format, the options and the
// table's Stamp (which changes whenever its content does), or the run of a changes
// export. Two jobs with the same fingerprint write the same features.
func (j *Job) Fingerprint() string {
	b, _ := json.Marshal(struct {
		V       int
		Format  Format
		Table   string
		Stamp   string
		BBox    *orb.Bound
		SRID    int
		Columns []string
		Where   string
		Changes *Changes
	}{1, j.format, j.table.Schema + "." + j.table.Name, j.table.Stamp, j.spec.BBox, j.srid, columnNames(j.cols), j.spec.Where, j.spec.Changes})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Write writes the file.
func (j *Job) Write(ctx context.Context) (Result, error) {
	if j.spec.Query != "" {
		res, _, err := j.writeQuery(ctx, j.spec.Path)
		return res, err
	}
	start := time.Now()
	res := Result{Format: j.format, Table: j.table.Schema + "." + j.table.Name}
	abs, err := filepath.Abs(j.spec.Path)
	if err != nil {
		return res, fmt.Errorf("export: %s: %w", j.spec.Path, err)
	}
	res.Path = abs
	// A flow's output directory is made as dbt makes its target: a first run needs no mkdir.
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return res, fmt.Errorf("export: making the directory of %s: %w", abs, err)
	}
	src, stop := j.source(ctx)
	defer stop()
	res.Features, err = j.writeFormat(ctx, abs, src)
	if err != nil {
		return res, fmt.Errorf("export: %s to %s: %w", j.what(), abs, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return res, fmt.Errorf("export: %s: %w", abs, err)
	}
	res.Bytes, res.Elapsed = fi.Size(), time.Since(start)
	return res, nil
}

// what names what the job exports, for errors.
func (j *Job) what() string {
	if j.spec.Query != "" {
		return queryName
	}
	if j.spec.Changes != nil {
		return fmt.Sprintf("the changes of run %d to %s.%s", j.spec.Changes.RunID, j.table.Schema, j.table.Name)
	}
	return j.table.Schema + "." + j.table.Name
}

// writeFormat writes src's features into path in the job's format.
func (j *Job) writeFormat(ctx context.Context, path string, src store.FeatureSource) (int64, error) {
	name := cmp.Or(j.table.Name, "changes")
	switch j.format {
	case GeoPackage:
		return gpkg.Export(ctx, path, gpkg.ExportLayer{Name: name, SRID: j.srid, Columns: j.cols,
			Description: "exported by geoflow from " + j.what(), SizeHint: j.sizeHint()}, src)
	case FlatGeobuf:
		return flatgeobuf.Write(ctx, path, flatgeobuf.Layer{Name: name, SRID: j.srid, Columns: j.cols,
			Description: "exported by geoflow from " + j.what()}, src, &flatgeobuf.Options{SizeHint: j.sizeHint()})
	case GeoJSONSeq:
		return geojsonseq.Write(ctx, path, geojsonseq.Layer{Columns: j.cols}, src, &geojsonseq.Options{RS: geojsonseq.RSFor(path)})
	}
	return 0, errors.New("no format")
}

// sizeHint is how many features the job writes when the store says so: the table's
// rows, read whole; 0 (not known) for a part of it or for changes.
func (j *Job) sizeHint() int {
	if j.spec.Changes != nil || j.spec.BBox != nil || j.spec.Where != "" {
		return 0
	}
	return int(min(j.table.Rows, 1<<30))
}

// ParseSRS is the EPSG code of a CRS written EPSG:n (or n alone, or
// urn:ogc:def:crs:EPSG::n).
func ParseSRS(s string) (int, error) {
	v := strings.TrimSpace(s)
	for _, p := range []string{"urn:ogc:def:crs:EPSG::", "EPSG:"} {
		if len(v) > len(p) && strings.EqualFold(v[:len(p)], p) {
			v = v[len(p):]
			break
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("export: srs %q: want EPSG:n, an EPSG code", s)
	}
	return n, nil
}
