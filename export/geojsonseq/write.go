// Package geojsonseq writes GeoJSON text sequences: one GeoJSON Feature per record, as
// RFC 8142 frames them (each record an ASCII RS, 0x1E, then the feature, then a line
// feed) or as newline-delimited GeoJSON (the feature and a line feed), the two forms
// GDAL's GeoJSONSeq driver reads and writes. GDAL starts records with RS when the file
// is named .geojsons and without when it is named .geojsonl (RSFor), and tells them
// apart when reading by the first byte.
//
// Features are encoded by spatial/geojson, as the web UI's downloads are; a sequence is
// lon/lat (RFC 7946), so its features must be.
package geojsonseq

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
)

// rs is the record separator RFC 8142 puts before each record.
const rs = 0x1e

// Layer describes the features of a sequence.
type Layer struct {
	// Columns are the properties each feature gets, in this order: Name is the member's
	// name, Property the key in Feature.Properties (defaults to Name), Type how the value
	// is written (propertyValue). A property missing from a feature is written as null,
	// so that every feature has every member; Properties that are not columns are not
	// written. Nil writes no properties (an empty object).
	Columns []store.Column
}

// Options tune Write; nil means the defaults.
type Options struct {
	// RS starts every record with the RS character (RFC 8142); false writes
	// newline-delimited GeoJSON. RSFor is what GDAL does for a file name.
	RS bool
}

// RSFor tells whether GDAL starts the records of a file named path with RS: when its
// extension is .geojsons, in any case.
func RSFor(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".geojsons")
}

// Write writes the features src yields (io.EOF ends) as a GeoJSON text sequence at
// path, and returns how many it wrote. Each feature's ID, when not "", is its "id"
// member; its geometry is written as it is (nil as null), in full precision; its
// properties are l.Columns'. No features make an empty file, which GDAL reads as a layer
// without features.
//
// The file is complete or absent: it is written as a temporary file in path's directory
// and renamed over path (taking the permissions of a file there; else 0644) once
// complete and synced. On any error, ctx's cancellation included, the temporary file is
// removed and path is left as it was. Memory holds one feature at a time.
func Write(ctx context.Context, path string, l Layer, src store.FeatureSource, opts *Options) (int64, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("geojsonseq: writing %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return 0, fmt.Errorf("geojsonseq: writing %s: it is a directory", abs)
	}
	out, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("geojsonseq: writing %s: creating its temporary file: %w", abs, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = out.Close()
			_ = os.Remove(out.Name())
		}
	}()
	n, err := writeRecords(ctx, out, l, src, o)
	if err == nil {
		err = finish(ctx, out, abs)
	}
	if err != nil {
		return 0, fmt.Errorf("geojsonseq: writing %s: %w", abs, err)
	}
	renamed = true
	if d, err := os.Open(filepath.Dir(abs)); err == nil { // best effort: the rename is done
		_ = d.Sync()
		_ = d.Close()
	}
	return n, nil
}

// writeRecords writes one record per feature of src into out.
func writeRecords(ctx context.Context, out io.Writer, l Layer, src store.FeatureSource, o Options) (int64, error) {
	w := bufio.NewWriterSize(out, 1<<20)
	var n int64
	var buf []byte
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		f, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("reading feature #%d: %w", n+1, err)
		}
		if f == nil {
			return n, fmt.Errorf("reading feature #%d: the source gave no feature and no error", n+1)
		}
		if buf, err = appendRecord(buf[:0], f, l, o); err != nil {
			return n, fmt.Errorf("feature #%d: %w", n+1, err)
		}
		if _, err := w.Write(buf); err != nil {
			return n, fmt.Errorf("writing feature #%d: %w", n+1, err)
		}
		n++
	}
	if err := w.Flush(); err != nil {
		return n, fmt.Errorf("writing the file: %w", err)
	}
	return n, nil
}

// appendRecord appends f's record to dst: RS when asked, the feature, a line feed.
func appendRecord(dst []byte, f *spatial.Feature, l Layer, o Options) ([]byte, error) {
	if o.RS {
		dst = append(dst, rs)
	}
	props, err := properties(f, l)
	if err != nil {
		return dst, err
	}
	var id any
	if f.ID != "" {
		id = f.ID
	}
	dst, err = geojson.AppendFeature(dst, id, f.Geometry, props)
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}

// finish syncs and closes out and renames it to path; ctx is looked at last before the
// rename.
func finish(ctx context.Context, out *os.File, path string) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := out.Chmod(mode); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("syncing the file: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("closing the file: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(out.Name(), path); err != nil {
		return fmt.Errorf("moving the file into place: %w", err)
	}
	return nil
}

// ordered is a feature's properties in its layer's column order, which encoding/json
// would sort as a map.
type ordered struct {
	names  []string
	values []any
}

// MarshalJSON writes the members in order.
func (p ordered) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, n := range p.names {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.values[i])
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", n, err)
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// properties are f's values of l's columns, each as propertyValue writes it.
func properties(f *spatial.Feature, l Layer) (ordered, error) {
	p := ordered{names: make([]string, len(l.Columns)), values: make([]any, len(l.Columns))}
	for i, c := range l.Columns {
		p.names[i] = c.Name
		prop := cmp.Or(c.Property, c.Name)
		v, ok := f.Properties[prop]
		if !ok || v == nil {
			continue
		}
		val, err := propertyValue(v, c.Type)
		if err != nil {
			return p, &store.PropertyError{FeatureID: f.ID, Property: prop, Type: c.Type, Value: fmt.Sprint(v)}
		}
		p.values[i] = val
	}
	return p, nil
}

// propertyValue is v as a JSON value of a column of type t: integers and doubles as
// numbers (an exact numeric too, written as its digits), booleans as true and false,
// JSON as itself, and the rest, dates and times included, as text. A number that JSON
// cannot hold (NaN, an infinity) is null.
func propertyValue(v any, t store.ColumnType) (any, error) {
	switch t {
	case store.TypeBigint, store.TypeDouble, store.TypeNumeric:
		return numberValue(v, t)
	case store.TypeBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case int64:
			return x != 0, nil
		case string:
			return strconv.ParseBool(x)
		}
		return nil, fmt.Errorf("%T is not a boolean", v)
	case store.TypeJSONB:
		switch x := v.(type) {
		case string:
			if json.Valid([]byte(x)) {
				return json.RawMessage(x), nil
			}
		case []byte:
			if json.Valid(x) {
				return json.RawMessage(bytes.Clone(x)), nil
			}
		default:
			return x, nil
		}
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	}
	return fmt.Sprint(v), nil
}

// numberValue is v as a JSON number of a column of type t.
func numberValue(v any, t store.ColumnType) (any, error) {
	var f float64
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case float64:
		f = x
	case string:
		s := strings.TrimSpace(x)
		if t == store.TypeBigint {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
		}
		p, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		if t == store.TypeNumeric && json.Valid([]byte(s)) {
			return json.Number(s), nil
		}
		f = p
	default:
		return nil, fmt.Errorf("%T is not a number", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, nil
	}
	if t == store.TypeBigint && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), nil
	}
	return f, nil
}
