package tasks

import (
	"context"
	"fmt"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// Store is what a task writes through. internal/pgstore implements it over PostgreSQL;
// tests use the same implementation against a real PostGIS.
type Store interface {
	// CommitUnit runs write inside one transaction and, in that same transaction, marks
	// the unit done with write's counts and stores write's children as pending units.
	// If write or the commit fails, nothing of it remains and the error is returned.
	CommitUnit(ctx context.Context, ref UnitRef, write func(ctx context.Context, tx Tx) (Result, error)) (Result, error)
	// EnsureFeatureTable creates t when it is missing, with its geometry, bookkeeping
	// columns and indexes, and fails with a clear error when a table of that name exists
	// with incompatible columns. It is called before anything is fetched.
	EnsureFeatureTable(ctx context.Context, t *FeatureTable) error
}

// Tx is the write side of one unit's transaction.
type Tx interface {
	// WriteFeatures streams src into t (binary COPY into a staging table, then one
	// INSERT ... ON CONFLICT), reporting features inserted, already present (skipped)
	// and, in upsert mode, updated. src is read until io.EOF; any other error from src
	// aborts the write and is returned unchanged (wrapped), so the caller can tell a
	// truncated response from a database failure.
	WriteFeatures(ctx context.Context, t *FeatureTable, src FeatureSource) (Result, error)
}

// FeatureSource yields features one at a time and io.EOF at the end; spatial readers
// implement it. Any error other than io.EOF aborts the write: a task that wants to skip
// refused features (*spatial.FeatureError) filters them out before the writer sees them.
type FeatureSource interface {
	Next() (*spatial.Feature, error)
}

// ColumnType is a PostgreSQL column type a feature property is stored as.
type ColumnType string

// The column types a property can have; see the WFS task for how XSD types map to them.
const (
	TypeText        ColumnType = "text"
	TypeBigint      ColumnType = "bigint"
	TypeDouble      ColumnType = "double precision"
	TypeNumeric     ColumnType = "numeric"
	TypeBoolean     ColumnType = "boolean"
	TypeDate        ColumnType = "date"
	TypeTimestamptz ColumnType = "timestamptz"
	TypeJSONB       ColumnType = "jsonb"
)

// Column maps one feature property to one column.
type Column struct {
	Name     string     // laundered column name
	Property string     // property name as the server spells it
	Type     ColumnType // column type
}

// Write modes of a feature table.
const (
	ModeAppend = "append" // key on the payload hash: a feature already stored is skipped
	ModeUpsert = "upsert" // key on Key: a changed feature is updated in place
)

// FeatureTable describes a target table for features.
type FeatureTable struct {
	Schema  string   // defaults to "public"
	Name    string   // table name
	SRID    int      // SRID of the geom column; 0 means unknown (geometry without SRID)
	Columns []Column // property columns in order
	Mode    string   // ModeAppend (default) or ModeUpsert
	Key     []string // column names of the upsert key
}

// PropertyError is a feature property whose value does not fit its column (a word in an
// integer column, say). Writers return it from WriteFeatures; it is bad data, not a
// database failure, so retrying the same response cannot help.
type PropertyError struct {
	FeatureID, Property string
	Type                ColumnType
	Value               string
}

func (e *PropertyError) Error() string {
	return fmt.Sprintf("feature %q: property %q: %q is not a valid %s", e.FeatureID, e.Property, e.Value, e.Type)
}

// FeatureCounter is implemented by stores that can count the distinct features of a
// table inside a lon/lat box, for completeness checks.
type FeatureCounter interface {
	CountFeatures(ctx context.Context, t *FeatureTable, bbox orb.Bound) (int64, error)
}

// Finisher is implemented by tasks that check their work once all units are done, such
// as a WFS harvest comparing the server's count with the features stored.
type Finisher interface {
	Finish(ctx context.Context, env *Env) error
}
