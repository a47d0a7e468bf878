package gpkg

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/store"
)

// What the web UI's maps and downloads read of a GeoPackage (store.Tables): the feature
// tables geoflow wrote, its tile pyramids, their vector and raster tiles and their rows.
// Every read goes through the maps' own readers (Store.m): in WAL mode a run writing
// the file never blocks them, and they never take the connections the run reads with.

var _ store.Tables = (*Store)(nil)

// mainSchema is the one schema of a GeoPackage, as StoredTable names it.
const mainSchema = "main"

// storedSQL lists the tables geoflow wrote, or the one named ?1: feature tables (with
// gf_payload_hash; not the views of history tables' current versions, which have it
// too) and tile pyramids (with their index table, name_index, and the whole Web
// Mercator square as their tile matrix set, so that tile z/x/y is row z/x/y), never
// geoflow's bookkeeping.
const storedSQL = `SELECT c.table_name, c.data_type, coalesce(c.last_change, ''), c.min_x, c.min_y, c.max_x, c.max_y,
	coalesce(g.srs_id, c.srs_id, 0)
FROM gpkg_contents c
JOIN sqlite_master m ON m.type = 'table' AND m.name = c.table_name
LEFT JOIN gpkg_geometry_columns g ON g.table_name = c.table_name
WHERE (?1 IS NULL OR c.table_name = ?1) AND substr(c.table_name, 1, 8) <> 'geoflow_' AND (
	c.data_type = 'features' AND g.column_name = 'geom'
		AND EXISTS (SELECT 1 FROM pragma_table_info(c.table_name) WHERE name = 'gf_payload_hash')
	OR c.data_type = 'tiles'
		AND EXISTS (SELECT 1 FROM pragma_table_info(c.table_name || '_index') WHERE name = 'gf_run_id')
		AND EXISTS (SELECT 1 FROM gpkg_tile_matrix_set s WHERE s.table_name = c.table_name AND s.srs_id = 3857
			AND s.min_x = -?2 AND s.min_y = -?2 AND s.max_x = ?2 AND s.max_y = ?2))
ORDER BY c.table_name`

// contentsRow is one row of storedSQL.
type contentsRow struct {
	name, dataType, lastChange string
	minX, minY, maxX, maxY     sql.NullFloat64
	srsID                      int64
}

// StoredTables implements store.Tables: the feature tables and tile pyramids geoflow
// wrote, by name.
func (s *Store) StoredTables(ctx context.Context) ([]store.StoredTable, error) {
	rows, err := s.contents(ctx, nil)
	if err != nil {
		return nil, translate("listing the tables geoflow wrote", err)
	}
	out := make([]store.StoredTable, 0, len(rows))
	for _, c := range rows {
		t, err := s.describe(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// StoredTable implements store.Tables. A GeoPackage has no schemas: schema "" and
// "main" name the file's tables as they are; "public" does too, and another schema
// names the table geoflow wrote for it (staging.roads is staging_roads), as writes name
// them (tableName).
func (s *Store) StoredTable(ctx context.Context, schema, name string) (store.StoredTable, error) {
	table := gpkgName(schema, name)
	rows, err := s.contents(ctx, table)
	if err != nil {
		return store.StoredTable{}, translate(fmt.Sprintf("looking up table %s", table), err)
	}
	if len(rows) == 0 {
		return store.StoredTable{}, fmt.Errorf("gpkg: %s is not a table geoflow wrote: %w", table, store.ErrNotFound)
	}
	return s.describe(ctx, rows[0])
}

// gpkgName is the GeoPackage table a schema and a name stand for.
func gpkgName(schema, name string) string {
	if schema == mainSchema {
		return name
	}
	return tableName(schema, name)
}

// contents reads storedSQL's rows, of every table (name nil) or of one.
func (s *Store) contents(ctx context.Context, name any) ([]contentsRow, error) {
	rows, err := s.m.QueryContext(ctx, storedSQL, name, worldHalf)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contentsRow
	for rows.Next() {
		var c contentsRow
		if err := rows.Scan(&c.name, &c.dataType, &c.lastChange, &c.minX, &c.minY, &c.maxX, &c.maxY, &c.srsID); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// describe fills in a table's description from its contents row.
func (s *Store) describe(ctx context.Context, c contentsRow) (store.StoredTable, error) {
	if c.dataType == "tiles" {
		t, err := s.describePyramid(ctx, c)
		return t, translate(fmt.Sprintf("describing tile pyramid %s", c.name), err)
	}
	t, err := s.describeFeatures(ctx, c)
	return t, translate(fmt.Sprintf("describing table %s", c.name), err)
}

// tableFacts are what describing a feature table costs most: its current rows and
// their extent (nil when none, or in a CRS not brought to lon/lat), valid while its
// stamp is.
type tableFacts struct {
	stamp  string
	rows   int64
	extent *orb.Bound
}

// describeFeatures describes a feature table: its property columns, counts, CRS,
// extent and stamp. The stamp is read every time (a count through the table's
// smallest index, max(fid) and last_change); the current rows and the extent are
// counted and measured again only when it changed.
func (s *Store) describeFeatures(ctx context.Context, c contentsRow) (store.StoredTable, error) {
	t := store.StoredTable{Schema: mainSchema, Name: c.name, Kind: store.KindFeatures}
	cols, err := s.m.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, c.name)
	if err != nil {
		return t, err
	}
	for cols.Next() {
		var col store.StoredColumn
		if err := cols.Scan(&col.Name, &col.Type); err != nil {
			cols.Close()
			return t, err
		}
		t.Keyed, t.History = t.Keyed || col.Name == "gf_key", t.History || col.Name == "gf_valid_to"
		if !ownColumn(col.Name) {
			t.Columns = append(t.Columns, col)
		}
	}
	cols.Close()
	if err := cols.Err(); err != nil {
		return t, err
	}
	if t.SRID, err = s.epsgCode(ctx, c.srsID); err != nil {
		return t, err
	}
	// max(fid) reads one row; count(*) alone (no WHERE) counts through the smallest
	// index, without reading the rows.
	var maxFID int64
	if err := s.m.QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), (SELECT coalesce(max(fid), 0) FROM %[1]s)`,
		quote(c.name))).Scan(&t.Versions, &maxFID); err != nil {
		return t, err
	}
	t.Stamp = stamp(store.KindFeatures, t.Versions, maxFID, c.lastChange)
	s.mu.Lock()
	facts, ok := s.facts[c.name]
	s.mu.Unlock()
	if !ok || facts.stamp != t.Stamp {
		if facts, err = s.measure(ctx, t); err != nil {
			return t, err
		}
		s.mu.Lock()
		if s.facts == nil {
			s.facts = map[string]tableFacts{}
		}
		s.facts[c.name] = facts
		s.mu.Unlock()
	}
	t.Rows, t.Extent = facts.rows, facts.extent
	return t, nil
}

// measure counts the current rows of feature table t (with history, through the
// current versions' partial index) and measures their extent.
func (s *Store) measure(ctx context.Context, t store.StoredTable) (tableFacts, error) {
	facts := tableFacts{stamp: t.Stamp, rows: t.Versions}
	if t.History {
		if err := s.m.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE gf_valid_to IS NULL`, quote(t.Name))).Scan(&facts.rows); err != nil {
			return facts, err
		}
	}
	if facts.rows == 0 {
		return facts, nil
	}
	ext, ok, err := s.featureExtent(ctx, t.Name, t.History)
	if err != nil {
		return facts, fmt.Errorf("computing its extent: %w", err)
	}
	if ok {
		facts.extent = lonLatBound(t.SRID, ext)
	}
	return facts, nil
}

// ownColumn tells the columns that are not a feature's properties: fid, geom and
// geoflow's gf_* columns.
func ownColumn(name string) bool {
	return name == "fid" || name == "geom" || strings.HasPrefix(name, "gf_")
}

// describePyramid describes a tile pyramid: its tiles, zoom levels, extent and stamp.
func (s *Store) describePyramid(ctx context.Context, c contentsRow) (store.StoredTable, error) {
	t := store.StoredTable{Schema: mainSchema, Name: c.name, Kind: store.KindTiles, SRID: 3857}
	var maxID int64
	var minZoom, maxZoom sql.NullInt64
	// min and max of zoom_level read one entry each of the (zoom_level, tile_column,
	// tile_row) index.
	if err := s.m.QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), (SELECT coalesce(max(id), 0) FROM %[1]s),
		(SELECT min(zoom_level) FROM %[1]s), (SELECT max(zoom_level) FROM %[1]s)`, quote(c.name))).Scan(&t.Rows, &maxID, &minZoom, &maxZoom); err != nil {
		return t, err
	}
	t.Versions = t.Rows
	t.MinZoom, t.MaxZoom = int(minZoom.Int64), int(maxZoom.Int64)
	if t.Rows > 0 && c.minX.Valid && c.minY.Valid && c.maxX.Valid && c.maxY.Valid {
		t.Extent = lonLatBound(3857, orb.Bound{Min: orb.Point{c.minX.Float64, c.minY.Float64}, Max: orb.Point{c.maxX.Float64, c.maxY.Float64}})
	}
	t.Stamp = stamp(store.KindTiles, t.Rows, maxID, c.lastChange)
	return t, nil
}

// stamp is a table's Stamp: a digest of its row count, its highest row id and the
// last_change every write of geoflow's moves (touchSQL). A write by another tool that
// adds or removes rows shows in the first two; one that changes a row in place, or
// closes a version, without moving last_change does not.
func stamp(kind string, count, maxID int64, lastChange string) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{kind, strconv.FormatInt(count, 10), strconv.FormatInt(maxID, 10), lastChange}, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// epsgCode is the EPSG code of a gpkg srs_id: its organization_coordsys_id when its
// organization is EPSG, else the srs_id itself (0 for undefined geographic, -1 for
// undefined Cartesian coordinates).
func (s *Store) epsgCode(ctx context.Context, srsID int64) (int, error) {
	var code int
	err := s.m.QueryRowContext(ctx, `SELECT organization_coordsys_id FROM gpkg_spatial_ref_sys
		WHERE srs_id = ? AND upper(organization) = 'EPSG'`, srsID).Scan(&code)
	if errors.Is(err, sql.ErrNoRows) {
		return int(srsID), nil
	}
	return code, err
}

// lonLatBound brings a box in the CRS of EPSG code srid to lon/lat: the same for 4326
// and 0 (unknown, taken as lon/lat), inverse Web Mercator for 3857, the box around the
// outline converted for the other CRSs spatial/proj supports; nil for any other CRS,
// which this store cannot transform.
func lonLatBound(srid int, b orb.Bound) *orb.Bound {
	switch srid {
	case 0, 4326:
		return &b
	case 3857, 900913:
		return &orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}
	}
	tr, err := transformer(srid, 4326)
	if err != nil {
		return nil
	}
	ll, err := tr.Bound(b)
	if err != nil {
		return nil
	}
	return &ll
}

// RasterTile implements store.Tables: tile z/x/y of pyramid t, whose rows are numbered
// as XYZ tiles are (see pyramid.go), and its content type, from its first bytes.
func (s *Store) RasterTile(ctx context.Context, t store.StoredTable, z, x, y int) ([]byte, string, error) {
	name := gpkgName(t.Schema, t.Name)
	if t.Kind != store.KindTiles {
		return nil, "", fmt.Errorf("gpkg: reading tile %d/%d/%d of %s: a %s table has no raster tiles", z, x, y, name, t.Kind)
	}
	var data []byte
	err := s.m.QueryRowContext(ctx, fmt.Sprintf(`SELECT tile_data FROM %s WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`,
		quote(name)), z, x, y).Scan(&data)
	if err != nil {
		return nil, "", translate(fmt.Sprintf("reading tile %d/%d/%d of %s", z, x, y, name), err)
	}
	return data, imageType(data), nil
}

// imageType tells a tile's content type by its magic bytes: PNG, JPEG, WebP, GIF, else
// application/octet-stream.
func imageType(b []byte) string {
	switch {
	case len(b) >= 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return "image/png"
	case len(b) >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff:
		return "image/jpeg"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	case len(b) >= 6 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		return "image/gif"
	}
	return "application/octet-stream"
}
