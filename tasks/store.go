package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

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
	// FinishFeatureTable creates indexes that EnsureFeatureTable deferred for a table it
	// created (the spatial index, built once over the first harvest's rows). It is
	// idempotent and cheap when there is nothing to do.
	FinishFeatureTable(ctx context.Context, t *FeatureTable) error
	TileStore
	AssetStore
}

// TileStore keeps the index of map tiles written to disk.
type TileStore interface {
	// EnsureTileTable creates t when it is missing (a GiST index on footprint, a unique
	// key on z, x, y) and fails clearly when a table of that name has other columns.
	EnsureTileTable(ctx context.Context, t *TileTable) error
	// LookupTile returns what is stored of tile z/x/y, or nil when it has no row, so a
	// fetch can revalidate it (If-None-Match, If-Modified-Since).
	LookupTile(ctx context.Context, t *TileTable, z, x, y int) (*StoredFile, error)
}

// AssetStore keeps the index of imagery files (WMS chips, STAC assets) written to disk.
type AssetStore interface {
	// EnsureAssetTable creates t when it is missing (a GiST index on footprint, a unique
	// key on collection, item, asset) and fails clearly when a table of that name has
	// other columns.
	EnsureAssetTable(ctx context.Context, t *AssetTable) error
	// LookupAsset returns what is stored of one asset, or nil when it has no row.
	LookupAsset(ctx context.Context, t *AssetTable, collection, item, asset string) (*StoredFile, error)
}

// Tx is the write side of one unit's transaction.
type Tx interface {
	// WriteFeatures streams src into t (binary COPY into a staging table, then one
	// INSERT ... ON CONFLICT), reporting features inserted, already present (skipped)
	// and, in upsert mode, updated. src is read until io.EOF; any other error from src
	// aborts the write and is returned unchanged (wrapped), so the caller can tell a
	// truncated response from a database failure.
	WriteFeatures(ctx context.Context, t *FeatureTable, src FeatureSource) (Result, error)
	// UpsertTile records one tile: Inserted 1 for a new row, Updated 1 for a changed
	// one. The tile's file must already be in place (renamed into its final path): the
	// row commits with the unit, after the file.
	UpsertTile(ctx context.Context, t *TileTable, row TileRow) (Result, error)
	// UpsertAsset records one imagery file, as UpsertTile does a tile.
	UpsertAsset(ctx context.Context, t *AssetTable, row AssetRow) (Result, error)
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

// Finisher is implemented by tasks that finish their work once no unit is left to run
// (all done, or some dead): indexing a table, comparing the server's count with the
// features stored. The runner calls it unless the task was interrupted; a replay calls it
// after re-executing a task's dead units.
type Finisher interface {
	Finish(ctx context.Context, env *Env) error
}

// TaskExtenter is implemented by stores that can tell the lon/lat extent of what another
// task of a flow stored (bbox_from). ok is false when the task has no finished run with
// data.
type TaskExtenter interface {
	TaskExtent(ctx context.Context, flow, task string) (b orb.Bound, ok bool, err error)
}

// TileTable describes a target table for map tiles: one row per tile, keyed on (z, x, y)
// in XYZ numbering whatever the server's scheme.
type TileTable struct {
	Schema string // defaults to "public"
	Name   string
}

// AssetTable describes a target table for imagery: one row per file, keyed on
// (collection, item, asset). WMS chips are stored with the layers as collection, the
// chip's key as item and "image" as asset.
type AssetTable struct {
	Schema string // defaults to "public"
	Name   string
}

// Statuses of stored files.
const (
	FileOK      = "ok"
	FileMissing = "missing" // a 404 inside the range with missing_ok: a row, no file
)

// StoredFile is what the index holds about a file already fetched.
type StoredFile struct {
	Status       string // FileOK or FileMissing
	Path         string
	Hash         []byte // sha-256 of the content
	Bytes        int64
	ETag         string
	LastModified string // as the server sent it, for If-Modified-Since
}

// TileRow is one map tile to record.
type TileRow struct {
	Z, X, Y      int
	Footprint    orb.Bound // lon/lat
	Status       string    // FileOK or FileMissing
	Path         string    // the file, "" when missing
	Hash         []byte    // sha-256 of the content; nil when missing
	Bytes        int64
	ContentType  string
	ETag         string
	LastModified string
}

// AssetRow is one imagery file to record.
type AssetRow struct {
	Collection, Item, Asset string
	Footprint               orb.Geometry // lon/lat polygon
	Datetime                *time.Time   // acquisition time, nil when unknown
	Properties              json.RawMessage
	Href                    string // where it was fetched from, redacted
	Path                    string
	Hash                    []byte // sha-256 of the content
	Checksum                string // file:checksum as the item carries it, verified; "" when none
	Bytes                   int64
	ContentType             string
	ETag                    string
	LastModified            string
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)

// SplitTable splits a target table name "[schema.]table" (schema defaults to public) and
// checks both parts are plain identifiers. They are quoted when used in SQL either way;
// the check is because odd names are far more often typos than intent.
func SplitTable(s string) (schema, table string, err error) {
	schema, table = "public", s
	if i := strings.IndexByte(s, '.'); i >= 0 {
		schema, table = s[:i], s[i+1:]
	}
	for _, part := range []string{schema, table} {
		if !identRE.MatchString(part) || len(part) > 63 {
			return "", "", fmt.Errorf("%q is not a table name: use [schema.]table with letters, digits and _ (at most 63 each)", s)
		}
	}
	return schema, table, nil
}
