package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/sqlscript"
)

// ErrQuery is what CheckQuery's errors wrap: a Query.SQL that is not one query.
var ErrQuery = errors.New("store: not one SQL query")

// Query is a SQL query whose result is read as features (Queries): what an export of a
// query (ogr2ogr's -sql) writes.
type Query struct {
	// SQL is one SELECT (WITH ... SELECT, VALUES, or PostgreSQL's TABLE) statement in the
	// store's own SQL; CheckQuery says what is refused. It is the user's own SQL on their
	// own database, run in a read-only transaction.
	SQL string
	// SRID is the EPSG code of the CRS the geometries are read in: 0 reads them in the
	// CRS the query returns them in. A CRS the store cannot bring them into fails.
	SRID int
}

// QueryResult describes the result of a query, as QueryFeatures hands it over before
// its first row: what a file's header needs.
type QueryResult struct {
	// Columns are the result's columns other than the geometry, in order: Name and
	// Property are the column's name, Type the ColumnType its values are read as.
	Columns []Column
	// Geometry is the name of the geometry column; "" when the result has none.
	Geometry string
	// SRID is the CRS of the geometries: Query.SRID when not 0, else that of the first
	// row's geometry (0 when no row has one, or it is unknown).
	SRID int
}

// Queries runs a user's SQL query and reads its result as features.
type Queries interface {
	// QueryFeatures runs q (CheckQuery first) in a read-only transaction and calls head
	// once with the description of its result, before any row, then fn with each row in
	// the query's order, streaming: its geometry column (the one column of geometries;
	// two fail) as the feature's geometry, in QueryResult.SRID, the other columns as
	// properties by name (nulls left out) typed as ReadFeatures types them. Features have
	// no ID. A result whose columns cannot be told apart (two of one name, or an
	// expression left unnamed) fails before head. head's or fn's error stops the read
	// and is returned.
	QueryFeatures(ctx context.Context, q Query, head func(QueryResult) error, fn func(*StoredFeature) error) error
}

// OneQuery is the text of the one statement sql holds, read in dialect d, without a
// trailing semicolon or comment, or an error wrapping ErrQuery when it is empty, holds
// more than one statement, is not a query (SELECT, WITH ... SELECT, VALUES, or in
// PostgreSQL TABLE), or has a parameter ($1, ?, @name: a query takes none). It does not
// parse SQL beyond that: the database does, read-only.
func OneQuery(sql string, d sqlscript.Dialect) (string, error) {
	sts, err := sqlscript.Split(sql, d)
	var se *sqlscript.ScanError
	if errors.As(err, &se) {
		line, col := sqlscript.Position(sql, se.Offset)
		return "", fmt.Errorf("query: line %d, column %d: %s: %w", line, col, se.Msg, ErrQuery)
	}
	if err != nil {
		return "", fmt.Errorf("query: %v: %w", err, ErrQuery)
	}
	switch {
	case len(sts) == 0:
		return "", fmt.Errorf("query: empty: %w", ErrQuery)
	case len(sts) > 1:
		line, col := sqlscript.Position(sql, sts[1].Start)
		return "", fmt.Errorf("query: a second statement at line %d, column %d (one query, no ;): %w", line, col, ErrQuery)
	}
	st := sts[0]
	verbs := []string{"SELECT", "VALUES"}
	if d == sqlscript.PostgreSQL {
		verbs = append(verbs, "TABLE")
	}
	if v := st.Verb(); !slices.Contains(verbs, v) {
		return "", fmt.Errorf("query: %s: a query reads, it does not write: SELECT (or WITH ... SELECT): %w", cmpWord(v), ErrQuery)
	}
	if ps := st.Params(); len(ps) > 0 {
		line, col := sqlscript.Position(sql, ps[0].Start)
		return "", fmt.Errorf("query: %s at line %d, column %d: a query takes no parameters: write the value: %w", ps[0].Text, line, col, ErrQuery)
	}
	return st.Text, nil
}

func cmpWord(v string) string {
	if v == "" {
		return "not a statement"
	}
	return v
}

// CheckQuery is OneQuery for a query checked before its store is known (a flow
// validated offline): it is taken when it is one query read as PostgreSQL or as SQLite,
// and else refused with PostgreSQL's reason.
func CheckQuery(sql string) error {
	_, err := OneQuery(sql, sqlscript.PostgreSQL)
	if err == nil {
		return nil
	}
	if _, lerr := OneQuery(sql, sqlscript.SQLite); lerr == nil {
		return nil
	}
	return err
}

// CheckQueryColumns refuses a result whose columns a file cannot tell apart: two of one
// name (ignoring case, as GeoPackage and GDAL compare them), or one the database named
// for want of a name ("?column?" in PostgreSQL).
func CheckQueryColumns(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case n == "" || n == "?column?":
			return fmt.Errorf("the query's result has a column without a name: name each expression with AS (its columns: %s)", strings.Join(names, ", "))
		case seen[strings.ToLower(n)]:
			return fmt.Errorf("the query's result has two columns named %q: name them apart with AS", n)
		}
		seen[strings.ToLower(n)] = true
	}
	return nil
}

// QueryGeometry is a geometry value of a query's row, as a store hands it to a
// QueryStream: decoded, with the EPSG code of its CRS (0: unknown).
type QueryGeometry struct {
	G    orb.Geometry
	SRID int
}

// QueryRowsHeld is how many rows a QueryStream holds back, at most, while it learns
// what its head needs: past them, columns without a value yet are text and the CRS is
// the query's SRID (0, unknown).
const QueryRowsHeld = 1000

// QueryStream turns a query's rows into what Queries.QueryFeatures promises, for both
// stores: it finds the geometry column (a store may not know it before the values) and
// the CRS of the geometries, types the columns the store could not type from their
// declaration by their first values, calls Head once it knows all that (or has held
// QueryRowsHeld rows), then Fn with each row as a feature. Columns whose Type is ""
// are typed from their values; Geometry is the index of the geometry column when the
// store knows it, else -1; SRID, when not 0, is the CRS every geometry is in already.
// It is used by one goroutine.
type QueryStream struct {
	Columns  []Column
	Geometry int
	SRID     int
	Head     func(QueryResult) error
	Fn       func(*StoredFeature) error

	started, sridKnown bool
	held               [][]any
	row                int64
}

// Row takes the next row: its values in column order, geometries as QueryGeometry,
// NULLs as nil, the others as the store reads them (int64, float64, bool, string).
func (s *QueryStream) Row(vals []any) error {
	s.row++
	if s.started {
		return s.emit(vals)
	}
	if err := s.learn(vals); err != nil {
		return err
	}
	s.held = append(s.held, vals)
	if s.known() || len(s.held) >= QueryRowsHeld {
		return s.start()
	}
	return nil
}

// End is the end of the rows: it calls Head, if no row did, and hands over those held.
func (s *QueryStream) End() error {
	if !s.started {
		return s.start()
	}
	return nil
}

// learn types the untyped columns by vals and finds the geometry column and CRS.
func (s *QueryStream) learn(vals []any) error {
	s.sridKnown = s.sridKnown || s.SRID != 0
	for i, v := range vals {
		g, isGeom := v.(QueryGeometry)
		switch {
		case v == nil:
		case isGeom && s.Geometry >= 0 && s.Geometry != i:
			return s.twoGeometries(i)
		case isGeom:
			s.Geometry = i
			if !s.sridKnown {
				s.SRID, s.sridKnown = g.SRID, true
			}
		case s.Columns[i].Type == "":
			s.Columns[i].Type = valueType(v)
		}
	}
	return nil
}

// known tells whether the head can be told: every column typed, and the CRS of the
// geometries known when there is a geometry column.
func (s *QueryStream) known() bool {
	for i, c := range s.Columns {
		if c.Type == "" && i != s.Geometry {
			return false
		}
	}
	return s.Geometry < 0 || s.sridKnown
}

// start calls Head and hands over the rows held.
func (s *QueryStream) start() error {
	s.started = true
	var r QueryResult
	for i, c := range s.Columns {
		if i == s.Geometry {
			r.Geometry = c.Name
			continue
		}
		if c.Type == "" {
			s.Columns[i].Type = TypeText
		}
		r.Columns = append(r.Columns, s.Columns[i])
	}
	r.SRID = s.SRID
	if err := s.Head(r); err != nil {
		return err
	}
	held := s.held
	s.held = nil
	s.row -= int64(len(held))
	for _, vals := range held {
		s.row++
		if err := s.emit(vals); err != nil {
			return err
		}
	}
	return nil
}

// emit hands one row over as a feature.
func (s *QueryStream) emit(vals []any) error {
	f := &StoredFeature{}
	f.Properties = make(map[string]any, len(vals))
	for i, v := range vals {
		g, isGeom := v.(QueryGeometry)
		switch {
		case v == nil:
		case i == s.Geometry && !isGeom:
			return fmt.Errorf("row %d: column %q holds a %T, not a geometry", s.row, s.Columns[i].Name, v)
		case i == s.Geometry:
			if g.SRID != s.SRID {
				return fmt.Errorf("row %d: its geometry is in EPSG:%d, those before it in EPSG:%d: the geometries of a query are in one CRS (transform them in the query, or ask for a CRS)", s.row, g.SRID, s.SRID)
			}
			f.Geometry = g.G
		case isGeom:
			return s.twoGeometries(i)
		default:
			f.Properties[s.Columns[i].Name] = v
		}
	}
	return s.Fn(f)
}

func (s *QueryStream) twoGeometries(i int) error {
	names := []string{s.Columns[s.Geometry].Name, s.Columns[i].Name}
	return fmt.Errorf("the query's result has two geometry columns, %s: an export writes one; leave one out, or make it text (ST_AsText)", strings.Join(names, " and "))
}

// valueType is the ColumnType of a column typed by its value v.
func valueType(v any) ColumnType {
	switch v.(type) {
	case int64, int32, int:
		return TypeBigint
	case float64, float32:
		return TypeDouble
	case bool:
		return TypeBoolean
	case time.Time:
		return TypeTimestamptz
	}
	return TypeText
}
