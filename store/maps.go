package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"time"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/spatial"
)

// Kinds of stored table, as StoredTable.Kind says.
const (
	KindFeatures = "features" // a feature table a task wrote (it has gf_payload_hash)
	KindTiles    = "tiles"    // a GeoPackage tile pyramid a tile task wrote (storage: geopackage)
)

// The bounds of one vector tile, DefaultTileFeatures features and DefaultTileBytes bytes
// of MVT: a tile that would hold more is thinned (TileQuery), never left to time out.
const (
	DefaultTileFeatures = 20000
	DefaultTileBytes    = 2 << 20
)

// StoredTable is a table geoflow wrote, as the web UI's maps and downloads need it.
type StoredTable struct {
	Schema string // "public" on PostGIS, "main" in a GeoPackage
	Name   string
	Kind   string // KindFeatures or KindTiles
	// SRID is the geometry column's (0: unknown); tile pyramids are 3857.
	SRID int
	// Columns are the feature properties' columns in table order: not geom, a GeoPackage's fid or
	// geoflow's own gf_* columns.
	Columns []StoredColumn
	// Keyed says rows carry gf_key (mirror mode, or history); History that every version
	// is kept (gf_valid_from, gf_valid_to, gf_closed_run).
	Keyed, History bool
	// Rows counts the current rows (with history, the current versions; a pyramid, its
	// tiles), Versions every row. Filled by StoredTables and StoredTable alike.
	Rows, Versions int64
	// Extent is the current rows' extent in lon/lat; nil when the table is empty or its
	// CRS cannot be brought to lon/lat by the store.
	Extent *orb.Bound
	// MinZoom and MaxZoom are a tile pyramid's zoom levels.
	MinZoom, MaxZoom int
	// Stamp changes whenever the table's content does: an HTTP ETag is made of it.
	Stamp string
}

// StoredColumn is one property column of a stored table.
type StoredColumn struct {
	Name string
	Type string // as the store declares it: "text", "bigint", "REAL", ...
}

// TileQuery asks for one vector tile (XYZ numbering on Web Mercator) of a feature table.
type TileQuery struct {
	Z, X, Y int
	// AsOfRun, for a table with history, draws the versions current after that run
	// (opened by it or before, not closed by then); 0 draws the current versions.
	AsOfRun int64
	// MaxFeatures and MaxBytes bound the tile. Defaults to DefaultTileFeatures and
	// DefaultTileBytes. Beyond them the tile is thinned: it keeps the features whose
	// payload hash falls below a threshold (SampleBelow), a sample that is the same in
	// neighbouring tiles and zoom levels, so thinning never tears the map at tile edges.
	MaxFeatures, MaxBytes int
}

// VectorTile is one Mapbox Vector Tile (MVT 2.1, extent 4096) of a feature table: one
// layer named after the table; each feature's id is its TileID, its properties the
// table's columns (nulls left out) and gf_feature_id, gf_run_id, and gf_key when keyed.
type VectorTile struct {
	// Data is the tile, uncompressed; empty when no feature meets the tile.
	Data []byte
	// Features is how many features Data holds; Thinned says more met the tile.
	Features int
	Thinned  bool
}

// FeatureQuery selects rows of a feature table for ReadFeatures.
type FeatureQuery struct {
	// BBox, lon/lat, keeps the rows whose geometry meets it; nil keeps all.
	BBox *orb.Bound
	// AsOfRun, with history, reads the versions current after that run; 0 the current
	// ones. AllVersions reads every version (and ignores AsOfRun).
	AsOfRun     int64
	AllVersions bool
	// TileID keeps the rows whose TileID it is (what a click on a tile's feature gives);
	// Key the rows of that gf_key (a keyed table's feature). Zero values keep all.
	TileID uint64
	Key    string
	// Limit caps the rows read; 0 reads every one.
	Limit int
	// SRID is the EPSG code of the CRS the geometries are read in: 0 reads them in
	// lon/lat (as StoredFeature says); the table's own SRID reads them as stored. A CRS
	// the store cannot bring the table's geometries into fails wrapping ErrNoTransform.
	SRID int
	// Where keeps the rows for which it is true: one boolean expression in the store's
	// own SQL (PostgreSQL's, or SQLite's for a GeoPackage) over the table's columns, as
	// ogr2ogr's -where takes it. It is the user's own SQL on their own database, run in a
	// read-only transaction; CheckWhere refuses what is not one expression. "" keeps all.
	Where string
	// FeaturesOnly reads the features alone, as a file export writes them: each row's
	// ID, Geometry and Properties; its bookkeeping (TileID, Key, RunID, ClosedRun,
	// FetchedAt, ValidFrom, ValidTo) is left zero, and the store does not read it.
	FeaturesOnly bool
	// AnyOrder lets the rows come in the order the store finds them fastest (a
	// table's physical order), not the stable order ReadFeatures otherwise keeps: for a
	// reader that orders them itself, as a FlatGeobuf's spatial index does. Sorting a
	// million rows cost PostgreSQL more than reading them.
	AnyOrder bool
}

// StoredFeature is one row of a feature table.
type StoredFeature struct {
	// Feature's ID is gf_feature_id, its Properties the columns by name (nulls left
	// out), its Geometry in lon/lat.
	spatial.Feature
	TileID    uint64
	Key       string // gf_key, "" when the table is not keyed
	RunID     int64  // the run that wrote the row (with history, opened the version)
	ClosedRun int64  // with history, the run that closed the version; 0 while current
	FetchedAt time.Time
	// ValidFrom and ValidTo are a version's life, with history (ValidTo nil while current).
	ValidFrom *time.Time
	ValidTo   *time.Time
}

// Tables is what the web UI's maps and downloads read of the tables geoflow wrote: only
// those, never another table of the database.
type Tables interface {
	// StoredTables lists the tables geoflow wrote, by schema and name.
	StoredTables(ctx context.Context) ([]StoredTable, error)
	// StoredTable describes one, or fails wrapping ErrNotFound when it is not a table
	// geoflow wrote. An empty schema is the store's default one.
	StoredTable(ctx context.Context, schema, name string) (StoredTable, error)
	// VectorTile renders tile q of feature table t.
	VectorTile(ctx context.Context, t StoredTable, q TileQuery) (VectorTile, error)
	// RasterTile returns tile z/x/y (XYZ) of tile pyramid t and its content type, or
	// fails wrapping ErrNotFound when the pyramid does not hold it.
	RasterTile(ctx context.Context, t StoredTable, z, x, y int) ([]byte, string, error)
	// ReadFeatures calls fn with each row of feature table t that q selects, in a
	// stable order, streaming (rows are not gathered first); fn's error stops it and is
	// returned. A table whose CRS the store cannot bring to lon/lat fails wrapping
	// ErrNoTransform.
	ReadFeatures(ctx context.Context, t StoredTable, q FeatureQuery, fn func(*StoredFeature) error) error
}

// FeatureRow is a feature with its properties as values in a column order the two
// sides agreed on, rather than in a map: what a file export's writers take.
type FeatureRow struct {
	ID       string
	Geometry orb.Geometry
	// Values are the properties, one per column in the agreed order; nil is NULL.
	Values []any
}

// RowReader is implemented by stores that read a feature table's rows as FeatureRows:
// ReadFeatures with FeaturesOnly (q's own is ignored), each row's Values in the order of
// t.Columns, typed as ReadFeatures types them, without a map per row (a tenth of an
// export's time). Each row's Values are its own.
type RowReader interface {
	ReadRows(ctx context.Context, t StoredTable, q FeatureQuery, fn func(*FeatureRow) error) error
}

// TileID is the id a row has in vector tiles: the first six bytes of its payload hash,
// which a browser holds exactly (under 2^53) and which tell rows apart: two of a million
// rows share one with a chance of about 0.2%, and a query by TileID then reads both.
func TileID(payloadHash []byte) uint64 {
	var b [8]byte
	copy(b[2:], payloadHash[:min(6, len(payloadHash))])
	return binary.BigEndian.Uint64(b[:])
}

// TileIDRange is the range of payload hashes [lo, hi) whose TileID is id: the rows a
// FeatureQuery.TileID selects, found through the payload hash's index.
func TileIDRange(id uint64) (lo, hi []byte) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	lo = append([]byte(nil), b[2:]...)
	binary.BigEndian.PutUint64(b[:], id+1)
	hi = append([]byte(nil), b[2:]...)
	if id+1 >= 1<<48 {
		hi = bytes.Repeat([]byte{0xff}, 33) // above every 32-byte hash
	}
	return lo, hi
}

// SampleBelow is the thinning threshold of a tile expected to meet expected features
// when it may hold limit: a row is kept when the first two bytes of its payload hash, as
// a big-endian number, are below it. 65536 keeps every row. expected is an estimate
// (the table's rows times the share of its extent the tile covers, say); a store that
// finds its tile still too full halves the threshold and tries again.
func SampleBelow(expected float64, limit int) int {
	if limit <= 0 || expected <= float64(limit) {
		return 65536
	}
	return max(1, int(65536*float64(limit)/expected))
}

// ExpectedInTile estimates how many of a table's rows meet a tile (both bounds in
// lon/lat): its rows spread evenly over its extent, times the share of the extent the
// tile covers in Web Mercator, axis by axis (an extent without width on an axis counts
// whole when the tile holds it). Without an extent every row is expected, so that a
// table whose extent is unknown is thinned rather than drawn whole. Both stores start a
// tile's thinning from it (SampleBelow).
func ExpectedInTile(rows int64, extent *orb.Bound, tile orb.Bound) float64 {
	if extent == nil {
		return float64(rows)
	}
	e, t := MercatorBound(*extent), MercatorBound(tile)
	share := 1.0
	for axis := range 2 {
		lo, hi := max(e.Min[axis], t.Min[axis]), min(e.Max[axis], t.Max[axis])
		switch width := e.Max[axis] - e.Min[axis]; {
		case hi < lo:
			return 0
		case width > 0:
			share *= (hi - lo) / width
		}
	}
	return float64(rows) * share
}

// MercatorBound is lon/lat bound b in Web Mercator metres, clamped to the square world.
func MercatorBound(b orb.Bound) orb.Bound {
	const half = 20037508.342789244
	clamp := func(v float64) float64 { return math.Max(-half, math.Min(half, v)) }
	lo, hi := project.WGS84.ToMercator(b.Min), project.WGS84.ToMercator(b.Max)
	return orb.Bound{Min: orb.Point{clamp(lo[0]), clamp(lo[1])}, Max: orb.Point{clamp(hi[0]), clamp(hi[1])}}
}
