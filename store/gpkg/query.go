package gpkg

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/sqlscript"
	"github.com/geoflow/geoflow/store"
)

var _ store.Queries = (*Store)(nil)

// geometryTypes are the column types a GeoPackage declares a geometry column with
// (its core types and the extension's curves).
var geometryTypes = map[string]bool{
	"GEOMETRY": true, "POINT": true, "LINESTRING": true, "POLYGON": true, "MULTIPOINT": true,
	"MULTILINESTRING": true, "MULTIPOLYGON": true, "GEOMETRYCOLLECTION": true, "CIRCULARSTRING": true,
	"COMPOUNDCURVE": true, "CURVEPOLYGON": true, "MULTICURVE": true, "MULTISURFACE": true, "CURVE": true, "SURFACE": true,
}

// QueryFeatures implements store.Queries. The query runs as it is on a maps' reader,
// whose connection is query-only (a statement that would write fails). A column is typed
// by its declared type (SQLite's decltype, which a table's column keeps through
// subqueries and views); one without (an expression) by its first values. The geometry
// column is the one declared as a GeoPackage geometry type, or whose values are
// GeoPackage geometry blobs (the magic "GP"); each geometry's CRS is its blob's srs_id,
// brought into q.SRID through spatial/proj when that is not 0. A BLOB that is not a
// geometry is read as hex text.
func (s *Store) QueryFeatures(ctx context.Context, q store.Query, head func(store.QueryResult) error, fn func(*store.StoredFeature) error) error {
	const what = "running the query"
	text, err := store.OneQuery(q.SQL, sqlscript.SQLite)
	if err != nil {
		return err
	}
	rows, err := s.m.QueryContext(ctx, text)
	if err != nil {
		return translate(what, err)
	}
	defer rows.Close()
	qs, err := queryStream(rows, q.SRID, head, fn)
	if err != nil {
		return err
	}
	conv := queryCRS{want: q.SRID}
	vals := make([]any, len(qs.Columns))
	dest := make([]any, len(vals))
	for rows.Next() {
		for i := range vals {
			vals[i] = nil
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return translate(what, err)
		}
		row, err := conv.row(vals, qs.Columns)
		if err != nil {
			return fmt.Errorf("gpkg: %s: %w", what, err)
		}
		if err := qs.Row(row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return translate(what, err)
	}
	return qs.End()
}

// queryStream is the store.QueryStream of rows: columns typed by their declared types
// ("" for none, left to the values), a column declared as a geometry its geometry.
func queryStream(rows *sql.Rows, srid int, head func(store.QueryResult) error, fn func(*store.StoredFeature) error) (*store.QueryStream, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, translate("describing the query's columns", err)
	}
	qs := &store.QueryStream{Geometry: -1, SRID: srid, Head: head, Fn: fn}
	names := make([]string, len(cts))
	var geoms []string
	for i, ct := range cts {
		names[i] = ct.Name()
		decl := strings.ToUpper(strings.TrimSpace(ct.DatabaseTypeName()))
		c := store.Column{Name: ct.Name(), Property: ct.Name()}
		switch {
		case geometryTypes[decl]:
			qs.Geometry, geoms = i, append(geoms, fmt.Sprintf("%s (%s)", ct.Name(), decl))
		case decl == "BOOLEAN":
			c.Type = store.TypeBoolean
		case decl != "":
			c.Type = store.DeclaredType(decl)
		}
		qs.Columns = append(qs.Columns, c)
	}
	if err := store.CheckQueryColumns(names); err != nil {
		return nil, err
	}
	if len(geoms) > 1 {
		return nil, fmt.Errorf("the query's result has %d geometry columns, %s: an export writes one; leave the others out", len(geoms), strings.Join(geoms, ", "))
	}
	return qs, nil
}

// queryCRS brings a query's geometries into the CRS want (0: as they are), keeping one
// conversion per CRS they come in.
type queryCRS struct {
	want  int
	convs map[int]func(orb.Geometry) (orb.Geometry, error)
}

// row makes the values SQLite gave a row into what store.QueryStream takes: a geometry
// blob decoded (and converted) as a store.QueryGeometry, a BOOLEAN column's 0 or 1 a
// bool, a time (a DATE or DATETIME column) its ISO text, another blob its hex.
func (c *queryCRS) row(vals []any, cols []store.Column) ([]any, error) {
	out := make([]any, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case []byte:
			if len(x) < 2 || x[0] != 'G' || x[1] != 'P' {
				out[i] = hex.EncodeToString(x)
				continue
			}
			g, err := c.geometry(x)
			if err != nil {
				return nil, fmt.Errorf("column %q: %w", cols[i].Name, err)
			}
			out[i] = g
		case int64:
			out[i] = v
			if cols[i].Type == store.TypeBoolean {
				out[i] = x != 0
			}
		case time.Time:
			out[i] = x.UTC().Format(timeFormat)
			if cols[i].Type == store.TypeDate {
				out[i] = x.UTC().Format(time.DateOnly)
			}
		default:
			out[i] = v
		}
	}
	return out, nil
}

// geometry decodes blob b, brought into c.want.
func (c *queryCRS) geometry(b []byte) (store.QueryGeometry, error) {
	g, srs, err := decodeGeometry(b)
	if err != nil {
		return store.QueryGeometry{}, err
	}
	if c.want == 0 {
		return store.QueryGeometry{G: g, SRID: int(srs)}, nil
	}
	conv, ok := c.convs[int(srs)]
	if !ok {
		if conv, err = readCRS(int(srs), c.want); err != nil {
			return store.QueryGeometry{}, err
		}
		if c.convs == nil {
			c.convs = map[int]func(orb.Geometry) (orb.Geometry, error){}
		}
		c.convs[int(srs)] = conv
	}
	if conv != nil {
		if g, err = conv(g); err != nil {
			return store.QueryGeometry{}, err
		}
	}
	return store.QueryGeometry{G: g, SRID: c.want}, nil
}
