package store

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/spatial"
)

// FeatureSource yields features one at a time and io.EOF at the end; spatial readers
// implement it. Any error other than io.EOF aborts the write: a task that wants to skip
// refused features (*spatial.FeatureError) filters them out before the writer sees them.
type FeatureSource interface {
	Next() (*spatial.Feature, error)
}

// RowSource is a FeatureSource that also yields its features as FeatureRows, their
// Values one per column of the layer being written, in its order (io.EOF at the end). A
// writer that knows the layer takes NextRow instead of Next, and saves a map per
// feature; a source is read one way or the other, not both.
type RowSource interface {
	FeatureSource
	NextRow() (*FeatureRow, error)
}

// Refuser is a FeatureSource that wants to hear of the features a store refused
// (ValidFeatures), so that its task reports them as it reports its own refusals.
type Refuser interface {
	// Refuse is called once per refused feature, before the next Next, with the reason
	// (a *spatial.GeometryError).
	Refuse(f *spatial.Feature, err error)
}

// ValidFeatures is what every store's WriteFeatures reads instead of its source: the
// source's features whose geometry spatial.Validate accepts, one at a time. A feature it
// refuses is skipped, counted in Refused and told to the source when it is a Refuser, so
// that one bad geometry (an unclosed ring PostGIS would fail the whole write on, and a
// GeoPackage store) costs that feature, not its page, and both stores refuse exactly the
// same features. Tasks validate before the store sees a feature; this is the store's own
// guard, for any path that did not. It is used by one goroutine.
type ValidFeatures struct {
	Src FeatureSource
	// Refused counts the features skipped so far.
	Refused int64
}

// Next implements FeatureSource.
func (v *ValidFeatures) Next() (*spatial.Feature, error) {
	for {
		f, err := v.Src.Next()
		if err != nil {
			return f, err
		}
		if err := spatial.Validate(f.Geometry); err != nil {
			v.Refused++
			if r, ok := v.Src.(Refuser); ok {
				r.Refuse(f, err)
			}
			continue
		}
		return f, nil
	}
}

// ColumnType is the type a feature property is stored as, named as PostgreSQL names it;
// other stores map each to their nearest type.
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

// Mode is how a feature table is written.
type Mode string

// Write modes of a feature table.
const (
	ModeAppend Mode = "append" // key on the payload hash: a feature already stored is skipped
	ModeUpsert Mode = "upsert" // key on Key: a changed feature is updated in place
	// ModeMirror keys rows on the feature (its id, or Key): a changed feature replaces
	// its row, and a feature absent from a complete harvest is deleted (tasks.FinishChanges decides, with the Mirrors primitives).
	ModeMirror Mode = "mirror"
)

// FeatureTable describes a target table for features.
type FeatureTable struct {
	Schema string // defaults to "public"
	Name   string // table name
	SRID   int    // SRID of the geom column; 0 means unknown (geometry without SRID)
	// SourceSRID is the SRID the features arrive in when the store must reproject them to
	// SRID (flows' target.srs); 0 means they arrive in SRID. Payload hashes are of the
	// geometry as it arrives.
	SourceSRID int
	Columns    []Column // property columns in order
	Mode       Mode     // ModeAppend (default), ModeUpsert or ModeMirror
	Key        []string // column names of the upsert key; of the mirror key, when not the feature id
	// History keeps every version of a feature: a changed or deleted feature's row is
	// closed (gf_valid_to, gf_closed_run) instead of updated or deleted, and a new
	// version inserted. Rows are then keyed as in mirror mode (gf_key).
	History bool
}

// Keyed says rows of t carry gf_key, the feature's identity (mirror mode, or history):
// its Key columns' values, else its feature id, else its payload hash.
func (t *FeatureTable) Keyed() bool { return t.Mode == ModeMirror || t.History }

// Picker picks the property of each of t's columns, in their order (Hasher.Pick).
func (t *FeatureTable) Picker() *spatial.Picker {
	props := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		props[i] = c.Property
	}
	return spatial.NewPicker(props)
}

// FeatureKey is the identity of f in a keyed table (see Keyed): the values of t.Key's
// columns (one value as text, several as a JSON array of texts and nulls), else f's id,
// else "#" and the hex payload hash, so that features without ids are still one row per
// payload. hash is f's payload hash.
func FeatureKey(f *spatial.Feature, t *FeatureTable, hash [32]byte) (string, error) {
	if len(t.Key) == 0 {
		if f.ID != "" {
			return f.ID, nil
		}
		return "#" + hex.EncodeToString(hash[:]), nil
	}
	vals := make([]string, len(t.Key))
	for i, k := range t.Key {
		for _, c := range t.Columns {
			if c.Name != k {
				continue
			}
			v, ok := f.Properties[c.Property]
			if !ok || v == nil || v == "" {
				return "", &KeyError{FeatureID: f.ID, Column: k}
			}
			s, err := ColumnText(v, c.Type)
			if err != nil {
				return "", &PropertyError{FeatureID: f.ID, Property: c.Property, Type: c.Type, Value: fmt.Sprint(v)}
			}
			vals[i] = s
		}
	}
	if len(vals) == 1 {
		return vals[0], nil
	}
	b, err := json.Marshal(vals)
	return string(b), err
}

// KeyError is a feature of a keyed table (mirror mode, or history) with no value for a
// key column: it cannot be told from other features, so its page is refused (a dead
// letter) rather than merged into another feature's row.
type KeyError struct {
	FeatureID, Column string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("feature %q has no value for key column %q, so it cannot be told from other features: key on properties every feature has (target.key), or leave target.key out to key on the feature id",
		e.FeatureID, e.Column)
}

// FailureClass implements dlq.Classed: the same response would fail the same way.
func (e *KeyError) FailureClass() dlq.Class { return dlq.ClassRejected }

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

// TileTable describes a target table for map tiles: one row per tile, keyed on (z, x, y)
// in XYZ numbering whatever the server's scheme.
type TileTable struct {
	Schema string // defaults to "public"
	Name   string
	// InStore keeps the tiles' content in the store itself, as a GeoPackage tile pyramid
	// (XYZ on WebMercator) named Name, indexed in Name_index, instead of as files. A store
	// that cannot (PostGIS) refuses it in EnsureTileTable.
	InStore bool
}

// AssetTable describes a target table for imagery: one row per file, keyed on
// (collection, item, asset). WMS chips are stored with the layers as collection, the
// chip's key as item and "image" as asset.
type AssetTable struct {
	Schema string // defaults to "public"
	Name   string
	// Bookkeeping marks geoflow's own record of the files it wrote (the export task's
	// geoflow_exports), not data: PostGIS keeps it with the rest of its bookkeeping, in
	// the bookkeeping schema (Schema is ignored), and its footprint as EWKB, not a
	// geometry column a GIS client would list as a layer. A GeoPackage ignores it.
	Bookkeeping bool
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
	Path         string    // the file, "" when missing or kept in the store
	Data         []byte    // the content, for a TileTable kept InStore; nil otherwise
	Hash         []byte    // sha-256 of the content; nil when missing
	Bytes        int64
	ContentType  string
	ETag         string
	LastModified string
}

// TileRange is the tiles X0..X1 by Y0..Y1 (both inclusive) of zoom level Z.
type TileRange struct{ Z, X0, Y0, X1, Y1 int }

// Contains tells whether tile x, y of r's level is in r.
func (r TileRange) Contains(x, y int) bool { return x >= r.X0 && x <= r.X1 && y >= r.Y0 && y <= r.Y1 }

// DistinctTiles returns rows with only the last row of each tile, in the order of those
// last rows; it returns rows itself when no tile repeats.
func DistinctTiles(rows []TileRow) []TileRow {
	last := make(map[[3]int]int, len(rows))
	for i, r := range rows {
		last[[3]int{r.Z, r.X, r.Y}] = i
	}
	if len(last) == len(rows) {
		return rows
	}
	out := make([]TileRow, 0, len(last))
	for i, r := range rows {
		if last[[3]int{r.Z, r.X, r.Y}] == i {
			out = append(out, r)
		}
	}
	return out
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
