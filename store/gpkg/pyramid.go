package gpkg

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"image"
	_ "image/jpeg" // tile sizes of JPEG tiles
	_ "image/png"  // and of PNG tiles

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// A tile pyramid (GeoPackage tiles, OGC 12-128r18 section 2.2) on WebMercator (EPSG:3857),
// the tile matrix set covering the whole square world so that every zoom level z is a
// 2^z x 2^z matrix whose rows count from the north, as XYZ tiles do: tile (z, x, y) is
// row (zoom_level z, tile_column x, tile_row y), with no renumbering.

// worldHalf is half the side of the WebMercator square, in metres.
const worldHalf = 20037508.342789244

// ensurePyramid creates the tiles table name and registers it (gpkg_contents,
// gpkg_tile_matrix_set); zoom levels are registered as their first tile arrives.
func (s *Store) ensurePyramid(ctx context.Context, name string) error {
	have, err := s.columns(ctx, name)
	if err != nil {
		return err
	}
	want := map[string]string{"id": "INTEGER", "zoom_level": "INTEGER", "tile_column": "INTEGER", "tile_row": "INTEGER", "tile_data": "BLOB"}
	if len(have) > 0 {
		if problems := store.ColumnProblems(want, have); len(problems) > 0 {
			return &store.IncompatibleTableError{Table: name, Problems: problems}
		}
		return nil
	}
	ref, _ := spatialRefFor(3857)
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.ensureSRS(ctx, tx, ref); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			zoom_level INTEGER NOT NULL,
			tile_column INTEGER NOT NULL,
			tile_row INTEGER NOT NULL,
			tile_data BLOB NOT NULL,
			UNIQUE (zoom_level, tile_column, tile_row))`, quote(name))); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change, srs_id)
			VALUES (?1, 'tiles', ?1, 'map tiles mirrored by geoflow', `+now+`, 3857)`, name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO gpkg_tile_matrix_set (table_name, srs_id, min_x, min_y, max_x, max_y)
			VALUES (?, 3857, ?, ?, ?, ?)`, name, -worldHalf, -worldHalf, worldHalf, worldHalf)
		return err
	})
	return translate(fmt.Sprintf("creating the tile pyramid %s", name), err)
}

// pyramidSQL are the statements putTiles runs on pyramid name: delete, put, register a
// zoom level, widen the extent, and record the change (touchSQL).
func pyramidSQL(name string) []string {
	return []string{
		fmt.Sprintf(`DELETE FROM %s WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`, quote(name)),
		fmt.Sprintf(`INSERT INTO %s (zoom_level, tile_column, tile_row, tile_data) VALUES (?, ?, ?, ?)
			ON CONFLICT (zoom_level, tile_column, tile_row) DO UPDATE SET tile_data = excluded.tile_data`, quote(name)),
		`INSERT INTO gpkg_tile_matrix (table_name, zoom_level, matrix_width, matrix_height, tile_width, tile_height, pixel_x_size, pixel_y_size)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (table_name, zoom_level) DO NOTHING`,
		`UPDATE gpkg_contents SET min_x = min(coalesce(min_x, ?1), ?1), min_y = min(coalesce(min_y, ?2), ?2),
			max_x = max(coalesce(max_x, ?3), ?3), max_y = max(coalesce(max_y, ?4), ?4) WHERE table_name = ?5`,
		touchSQL,
	}
}

// putTiles writes tiles' content into the pyramid (or removes tiles the server no longer
// has), registers each zoom level the tiles are on, with the size in pixels of its first
// tile, widens the pyramid's extent in gpkg_contents to cover them and moves its
// last_change (a tile replaced in place changes neither its count nor its ids). The
// unit's transaction is open (the index rows began it); q is pyramidSQL(name).
func (u *unitTx) putTiles(ctx context.Context, name string, q []string, rows []store.TileRow) error {
	var what string
	exec := func(query string, args ...any) error {
		st, err := u.s.stmt(ctx, u.tx, query)
		if err == nil {
			_, err = st.ExecContext(ctx, args...)
		}
		return translate(what, err)
	}
	levels := map[int]store.TileRow{} // the first tile stored on each level
	var extent orb.Bound              // of the tiles stored, once stored is true
	stored := false
	for _, r := range rows {
		what = fmt.Sprintf("storing tile %d/%d/%d in %s", r.Z, r.X, r.Y, name)
		if r.Status != store.FileOK {
			if err := exec(q[0], r.Z, r.X, r.Y); err != nil {
				return err
			}
			continue
		}
		if err := exec(q[1], r.Z, r.X, r.Y, r.Data); err != nil {
			return err
		}
		if _, ok := levels[r.Z]; !ok {
			levels[r.Z] = r
		}
		if b := store.MercatorBound(r.Footprint); stored {
			extent = extent.Union(b)
		} else {
			extent, stored = b, true
		}
	}
	if len(rows) > 0 {
		what = fmt.Sprintf("recording the change of %s", name)
		if err := exec(q[4], name); err != nil {
			return err
		}
	}
	if len(levels) == 0 {
		return nil
	}
	what = fmt.Sprintf("registering the zoom levels of %s", name)
	for z, r := range levels {
		w, h := 256, 256
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(r.Data)); err == nil {
			w, h = cfg.Width, cfg.Height
		}
		n := 1 << z
		if err := exec(q[2], name, z, n, n, w, h, 2*worldHalf/float64(n*w), 2*worldHalf/float64(n*h)); err != nil {
			return err
		}
	}
	what = fmt.Sprintf("widening the extent of %s", name)
	return exec(q[3], extent.Min[0], extent.Min[1], extent.Max[0], extent.Max[1], name)
}
