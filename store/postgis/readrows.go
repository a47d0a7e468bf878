package postgis

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/store"
)

// rowScanner reads readSQL's rows into StoredFeatures from the bytes the server sent
// (pgx's RawValues): the property columns come as propertySQL casts them, bigint,
// double precision, boolean or text, in pgx's binary form, which a few lines decode
// without pgx's per-value scan plans and boxing through pointers (a third of reading
// a row took). A column of another type or form, and the bookkeeping columns, are
// decoded by the connection's type map as Scan would.
type rowScanner struct {
	t     store.StoredTable
	bare  bool // FeaturesOnly: geometry, id, then the properties
	types *pgtype.Map
	// The bookkeeping, decoded into these; reused from row to row.
	hash               []byte
	id, key            *string
	run, closed        *int64
	fetched            time.Time
	validFrom, validTo *time.Time
	fields             []column
	props              int // the first property column
}

// column is a result column's type and form.
type column struct {
	oid    uint32
	format int16
}

func newRowScanner(rows pgx.Rows, t store.StoredTable, bare bool) *rowScanner {
	s := &rowScanner{t: t, bare: bare, types: rows.Conn().TypeMap(), props: 9}
	if bare {
		s.props = 2
	}
	for _, fd := range rows.FieldDescriptions() {
		s.fields = append(s.fields, column{fd.DataTypeOID, fd.Format})
	}
	return s
}

// scanError is an error of reading a row, which ReadFeatures translates (a fn's own
// error it returns as it is).
type scanError struct{ err error }

func (e scanError) Error() string { return e.err.Error() }

// scan reads the current row.
func (s *rowScanner) scan(rows pgx.Rows) (*store.StoredFeature, error) {
	raw, err := s.raw(rows)
	if err != nil {
		return nil, err
	}
	f := &store.StoredFeature{}
	if err := s.bookkeeping(raw, f); err != nil {
		return nil, scanError{err}
	}
	if f.Geometry, err = s.geometry(raw, f.ID); err != nil {
		return nil, err
	}
	f.Properties = make(map[string]any, len(s.t.Columns)+3)
	for i, c := range s.t.Columns {
		v, err := s.property(raw, i, f.ID)
		if err != nil {
			return nil, err
		}
		if v != nil {
			f.Properties[c.Name] = v
		}
	}
	return f, nil
}

// row reads the current row of a bare read (FeaturesOnly) as a FeatureRow.
func (s *rowScanner) row(rows pgx.Rows) (*store.FeatureRow, error) {
	raw, err := s.raw(rows)
	if err != nil {
		return nil, err
	}
	r := &store.FeatureRow{ID: string(raw[1]), Values: make([]any, len(s.t.Columns))}
	if r.Geometry, err = s.geometry(raw, r.ID); err != nil {
		return nil, err
	}
	for i := range s.t.Columns {
		if r.Values[i], err = s.property(raw, i, r.ID); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// raw is the current row's bytes, checked to have readSQL's columns.
func (s *rowScanner) raw(rows pgx.Rows) ([][]byte, error) {
	raw := rows.RawValues()
	if len(raw) != s.props+len(s.t.Columns) {
		return nil, scanError{fmt.Errorf("reading a row: %d columns, want %d", len(raw), s.props+len(s.t.Columns))}
	}
	return raw, nil
}

// geometry decodes the row's geometry (nil for NULL).
func (s *rowScanner) geometry(raw [][]byte, id string) (orb.Geometry, error) {
	if len(raw[0]) == 0 {
		return nil, nil
	}
	g, err := wkb.Unmarshal(raw[0])
	if err != nil {
		return nil, scanError{fmt.Errorf("feature %q: decoding its geometry: %w", id, err)}
	}
	return g, nil
}

// property decodes property column i of the row (nil for NULL).
func (s *rowScanner) property(raw [][]byte, i int, id string) (any, error) {
	k := s.props + i
	if raw[k] == nil {
		return nil, nil
	}
	v, err := s.value(k, raw[k])
	if err != nil {
		return nil, scanError{fmt.Errorf("feature %q: reading %s: %w", id, s.t.Columns[i].Name, err)}
	}
	return v, nil
}

// bookkeeping decodes the columns before the properties: the feature id, and unless
// bare, the payload hash, run, fetch time, key and a version's life.
func (s *rowScanner) bookkeeping(raw [][]byte, f *store.StoredFeature) error {
	if s.bare {
		f.ID = string(raw[1])
		return nil
	}
	dest := []any{nil, &s.hash, &s.id, &s.run, &s.fetched, &s.key, &s.closed, &s.validFrom, &s.validTo}
	for i := 1; i < s.props; i++ {
		if err := s.types.Scan(s.fields[i].oid, s.fields[i].format, raw[i], dest[i]); err != nil {
			return fmt.Errorf("reading column %d: %w", i+1, err)
		}
	}
	f.TileID, f.FetchedAt = store.TileID(s.hash), s.fetched
	f.ValidFrom, f.ValidTo = copyOf(s.validFrom), copyOf(s.validTo) // pgx reuses what they point at
	f.ID, f.Key, f.RunID, f.ClosedRun = orZero(s.id), orZero(s.key), orZero(s.run), orZero(s.closed)
	return nil
}

// copyOf is a pointer to a copy of *p; nil for nil.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// orZero is *p, the zero value for nil.
func orZero[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// rawBinary tells whether every column read as stored (clientCast) came in binary,
// which rawValue decodes.
func (s *rowScanner) rawBinary() bool {
	if len(s.fields) < s.props {
		return true // no rows to come: the statement failed, as Next will say
	}
	for _, f := range s.fields[s.props:] {
		if rawOIDs[f.oid] && f.format != pgx.BinaryFormatCode {
			return false
		}
	}
	return true
}

// value decodes column k's bytes b (not NULL) as a property: int64, float64, bool or
// string, as Scan into an any makes them.
func (s *rowScanner) value(k int, b []byte) (any, error) {
	fc := s.fields[k]
	if fc.format == pgx.BinaryFormatCode {
		switch fc.oid {
		case pgtype.Int8OID:
			if len(b) == 8 {
				return int64(binary.BigEndian.Uint64(b)), nil
			}
		case pgtype.Float8OID:
			if len(b) == 8 {
				return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
			}
		case pgtype.BoolOID:
			if len(b) == 1 {
				return b[0] == 1, nil
			}
		case pgtype.TextOID, pgtype.VarcharOID:
			return string(b), nil
		}
		if rawOIDs[fc.oid] {
			return rawValue(fc.oid, b)
		}
	} else if fc.oid == pgtype.TextOID || fc.oid == pgtype.VarcharOID {
		return string(b), nil
	}
	var v any
	err := s.types.Scan(fc.oid, fc.format, b, &v)
	return v, err
}
