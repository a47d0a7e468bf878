package gpkg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// The index tables of files on disk (map tiles, imagery) are GeoPackage feature tables
// whose geometry is each file's lon/lat footprint, so QGIS draws what was fetched. Their
// rows are written in the unit's transaction after the file is in place, as in PostGIS.

var (
	_ store.TileStore  = (*Store)(nil)
	_ store.AssetStore = (*Store)(nil)
)

// fileTable is the layout of one kind of index table.
type fileTable struct {
	cols []string          // column definitions after fid and footprint
	want map[string]string // every column and its declared type
	key  []string          // the unique key
}

var tileTable = fileTable{
	cols: []string{`"z" INTEGER NOT NULL`, `"x" INTEGER NOT NULL`, `"y" INTEGER NOT NULL`, `"status" TEXT NOT NULL`, `"path" TEXT`,
		`"content_hash" BLOB`, `"bytes" INTEGER NOT NULL DEFAULT 0`, `"content_type" TEXT`, `"etag" TEXT`, `"last_modified" TEXT`,
		`"fetched_at" DATETIME NOT NULL`, `"gf_run_id" INTEGER`},
	want: map[string]string{"fid": "INTEGER", "footprint": "POLYGON", "z": "INTEGER", "x": "INTEGER", "y": "INTEGER",
		"status": "TEXT", "path": "TEXT", "content_hash": "BLOB", "bytes": "INTEGER", "content_type": "TEXT", "etag": "TEXT",
		"last_modified": "TEXT", "fetched_at": "DATETIME", "gf_run_id": "INTEGER"},
	key: []string{"z", "x", "y"},
}

var assetTable = fileTable{
	cols: []string{`"collection" TEXT NOT NULL`, `"item" TEXT NOT NULL`, `"asset" TEXT NOT NULL`, `"datetime" DATETIME`,
		`"properties" TEXT`, `"href" TEXT`, `"path" TEXT`, `"content_hash" BLOB`, `"checksum" TEXT`, `"bytes" INTEGER NOT NULL DEFAULT 0`,
		`"content_type" TEXT`, `"etag" TEXT`, `"last_modified" TEXT`, `"fetched_at" DATETIME NOT NULL`, `"gf_run_id" INTEGER`},
	want: map[string]string{"fid": "INTEGER", "footprint": "GEOMETRY", "collection": "TEXT", "item": "TEXT", "asset": "TEXT",
		"datetime": "DATETIME", "properties": "TEXT", "href": "TEXT", "path": "TEXT", "content_hash": "BLOB", "checksum": "TEXT",
		"bytes": "INTEGER", "content_type": "TEXT", "etag": "TEXT", "last_modified": "TEXT", "fetched_at": "DATETIME", "gf_run_id": "INTEGER"},
	key: []string{"collection", "item", "asset"},
}

// EnsureTileTable implements store.TileStore. Tiles kept InStore go into a tile pyramid
// named after the table, and their index into table_index.
func (s *Store) EnsureTileTable(ctx context.Context, t *store.TileTable) error {
	if !t.InStore {
		return s.ensureFileTable(ctx, tableName(t.Schema, t.Name), "POLYGON", tileTable)
	}
	if err := s.ensurePyramid(ctx, tableName(t.Schema, t.Name)); err != nil {
		return err
	}
	return s.ensureFileTable(ctx, tileIndex(t), "POLYGON", tileTable)
}

// tileIndex is the name of the table indexing t's tiles.
func tileIndex(t *store.TileTable) string {
	if t.InStore {
		return tableName(t.Schema, t.Name) + "_index"
	}
	return tableName(t.Schema, t.Name)
}

// EnsureAssetTable implements store.AssetStore.
func (s *Store) EnsureAssetTable(ctx context.Context, t *store.AssetTable) error {
	return s.ensureFileTable(ctx, tableName(t.Schema, t.Name), "GEOMETRY", assetTable)
}

func (s *Store) ensureFileTable(ctx context.Context, name, geomType string, ft fileTable) error {
	have, err := s.columns(ctx, name)
	if err != nil {
		return err
	}
	if len(have) > 0 {
		if problems := store.ColumnProblems(ft.want, have); len(problems) > 0 {
			return &store.IncompatibleTableError{Table: name, Problems: problems}
		}
		return nil
	}
	ref, _ := spatialRefFor(4326)
	keys := make([]string, len(ft.key))
	for i, k := range ft.key {
		keys[i] = quote(k)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		// Another task may have created it since it was looked up (two tasks of a flow
		// sharing a table plan at once); the writer's transaction sees it.
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil || n > 0 {
			return err
		}
		for _, st := range []string{
			fmt.Sprintf(`CREATE TABLE %s ("fid" INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, "footprint" %s, %s)`,
				quote(name), geomType, strings.Join(ft.cols, ", ")),
			fmt.Sprintf(`CREATE UNIQUE INDEX %s ON %s (%s)`, quote(name+"_gf_key"), quote(name), strings.Join(keys, ", ")),
		} {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change, srs_id)
			VALUES (?1, 'features', ?1, 'files fetched by geoflow', `+now+`, 4326)`, name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO gpkg_geometry_columns (table_name, column_name, geometry_type_name, srs_id, z, m)
			VALUES (?, 'footprint', ?, ?, 0, 0)`, name, geomType, ref.ID)
		return err
	})
	return translate(fmt.Sprintf("creating table %s", name), err)
}

// LookupTiles implements store.TileStore.
func (s *Store) LookupTiles(ctx context.Context, t *store.TileTable, r store.TileRange) (map[[2]int]*store.StoredFile, error) {
	name := tileIndex(t)
	what := fmt.Sprintf("looking up tiles %d/%d-%d/%d-%d in %s", r.Z, r.X0, r.X1, r.Y0, r.Y1, name)
	st, err := s.readStmt(ctx, fmt.Sprintf(`SELECT x, y, status, coalesce(path, ''), content_hash, bytes, coalesce(etag, ''), coalesce(last_modified, '')
		FROM %s WHERE z = ? AND x BETWEEN ? AND ? AND y BETWEEN ? AND ?`, quote(name)))
	if err != nil {
		return nil, translate(what, err)
	}
	rows, err := st.QueryContext(ctx, r.Z, r.X0, r.X1, r.Y0, r.Y1)
	if err != nil {
		return nil, translate(what, err)
	}
	defer rows.Close()
	found := map[[2]int]*store.StoredFile{}
	for rows.Next() {
		var x, y int
		var f store.StoredFile
		if err := rows.Scan(&x, &y, &f.Status, &f.Path, &f.Hash, &f.Bytes, &f.ETag, &f.LastModified); err != nil {
			return nil, translate(what, err)
		}
		found[[2]int{x, y}] = &f
	}
	if err := rows.Err(); err != nil {
		return nil, translate(what, err)
	}
	return found, nil
}

// LookupAsset implements store.AssetStore.
func (s *Store) LookupAsset(ctx context.Context, t *store.AssetTable, collection, item, asset string) (*store.StoredFile, error) {
	name := tableName(t.Schema, t.Name)
	return s.lookupFile(ctx, fmt.Sprintf("looking up asset %s/%s/%s in %s", collection, item, asset, name),
		fmt.Sprintf(`SELECT 'ok', coalesce(path, ''), content_hash, bytes, coalesce(etag, ''), coalesce(last_modified, '')
		FROM %s WHERE collection = ? AND item = ? AND asset = ?`, quote(name)), collection, item, asset)
}

func (s *Store) lookupFile(ctx context.Context, what, q string, args ...any) (*store.StoredFile, error) {
	var f store.StoredFile
	st, err := s.readStmt(ctx, q)
	if err != nil {
		return nil, translate(what, err)
	}
	err = st.QueryRowContext(ctx, args...).Scan(&f.Status, &f.Path, &f.Hash, &f.Bytes, &f.ETag, &f.LastModified)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(what, err)
	}
	return &f, nil
}

// UpsertTiles implements store.UnitTx. The footprints are encoded before the writer is
// taken; a pyramid's zoom levels and extent are registered once for the whole batch.
func (u *unitTx) UpsertTiles(ctx context.Context, t *store.TileTable, rows []store.TileRow) (store.Counts, error) {
	rows = store.DistinctTiles(rows)
	name := tileIndex(t)
	fps := make([][]byte, len(rows))
	for i, r := range rows {
		fp, err := encodeGeometry(r.Footprint.ToPolygon(), 4326)
		if err != nil {
			return store.Counts{}, fmt.Errorf("tile %d/%d/%d: encoding its footprint: %w", r.Z, r.X, r.Y, err)
		}
		fps[i] = fp
	}
	var pyramid []string // its statements are prepared with the index's
	if t.InStore {
		pyramid = pyramidSQL(tableName(t.Schema, t.Name))
	}
	var c store.Counts
	for i, r := range rows {
		rc, err := u.upsertFile(ctx, fmt.Sprintf("recording tile %d/%d/%d in %s", r.Z, r.X, r.Y, name), name,
			[]string{"footprint", "status", "path", "content_hash", "bytes", "content_type", "etag", "last_modified"},
			[]any{fps[i], r.Status, nullIfEmpty(r.Path), r.Hash, r.Bytes, nullIfEmpty(r.ContentType), nullIfEmpty(r.ETag), nullIfEmpty(r.LastModified)},
			tileTable.key, []any{r.Z, r.X, r.Y}, r.Bytes, pyramid...)
		if err != nil {
			return store.Counts{}, err
		}
		c.Add(rc)
	}
	if t.InStore {
		if err := u.putTiles(ctx, tableName(t.Schema, t.Name), pyramid, rows); err != nil {
			return store.Counts{}, err
		}
	}
	return c, nil
}

// UpsertAsset implements store.UnitTx.
func (u *unitTx) UpsertAsset(ctx context.Context, t *store.AssetTable, r store.AssetRow) (store.Counts, error) {
	name := tableName(t.Schema, t.Name)
	var fp any
	if r.Footprint != nil {
		b, err := encodeGeometry(r.Footprint, 4326)
		if err != nil {
			return store.Counts{}, fmt.Errorf("asset %s/%s: encoding its footprint: %w", r.Item, r.Asset, err)
		}
		fp = b
	}
	var props any
	if len(r.Properties) > 0 {
		props = string(r.Properties)
	}
	var dt any
	if r.Datetime != nil {
		dt = ts(*r.Datetime)
	}
	return u.upsertFile(ctx, fmt.Sprintf("recording asset %s/%s/%s in %s", r.Collection, r.Item, r.Asset, name), name,
		[]string{"footprint", "datetime", "properties", "href", "path", "content_hash", "checksum", "bytes", "content_type", "etag", "last_modified"},
		[]any{fp, dt, props, nullIfEmpty(r.Href), nullIfEmpty(r.Path), r.Hash, nullIfEmpty(r.Checksum), r.Bytes,
			nullIfEmpty(r.ContentType), nullIfEmpty(r.ETag), nullIfEmpty(r.LastModified)},
		assetTable.key, []any{r.Collection, r.Item, r.Asset}, r.Bytes)
}

// fileSQL is the UPDATE and the INSERT of a row of index table name, whose values are
// cols (then fetched_at and gf_run_id) and whose key is key.
func fileSQL(name string, cols, key []string) (upd, ins string) {
	cols = append(cols[:len(cols):len(cols)], "fetched_at", "gf_run_id")
	sets := make([]string, len(cols))
	for i, c := range cols {
		sets[i] = quote(c) + " = ?"
	}
	match := make([]string, len(key))
	for i, k := range key {
		match[i] = quote(k) + " = ?"
	}
	all := make([]string, 0, len(key)+len(cols))
	for _, c := range append(append([]string{}, key...), cols...) {
		all = append(all, quote(c))
	}
	return fmt.Sprintf(`UPDATE %s SET %s WHERE %s`, quote(name), strings.Join(sets, ", "), strings.Join(match, " AND ")),
		fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, quote(name), strings.Join(all, ", "), placeholders(len(all)))
}

// upsertFile updates the row with key, or inserts it: Updated 1 or Inserted 1. warm are
// more statements the caller runs in the same transaction, prepared with these.
func (u *unitTx) upsertFile(ctx context.Context, what, name string, cols []string, vals []any, key []string, keyVals []any, bytes int64, warm ...string) (store.Counts, error) {
	updSQL, insSQL := fileSQL(name, cols, key)
	tx, err := u.begin(ctx, append(warm, updSQL, insSQL)...)
	if err != nil {
		return store.Counts{}, err
	}
	vals = append(vals, ts(time.Now()), u.ref.RunID)
	upd, err := u.s.stmt(ctx, tx, updSQL)
	if err != nil {
		return store.Counts{}, translate(what, err)
	}
	res, err := upd.ExecContext(ctx, append(append([]any{}, vals...), keyVals...)...)
	if err != nil {
		return store.Counts{}, translate(what, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return store.Counts{Updated: 1, Bytes: bytes}, nil
	}
	ins, err := u.s.stmt(ctx, tx, insSQL)
	if err != nil {
		return store.Counts{}, translate(what, err)
	}
	if _, err := ins.ExecContext(ctx, append(append([]any{}, keyVals...), vals...)...); err != nil {
		return store.Counts{}, translate(what, err)
	}
	return store.Counts{Inserted: 1, Bytes: bytes}, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TaskExtent implements tasks.Records: the extent of the units that stored something
// in the latest run of flow where task finished done.
func (s *Store) TaskExtent(ctx context.Context, flow, task string) (orb.Bound, bool, error) {
	var b box
	err := s.r.QueryRowContext(ctx, `
		WITH last AS (
			SELECT t.run_id FROM geoflow_run_tasks t JOIN geoflow_runs r ON r.id = t.run_id
			WHERE r.flow = ?1 AND t.task = ?2 AND t.state = 'done' ORDER BY t.run_id DESC LIMIT 1)
		SELECT min(u.min_x), min(u.min_y), max(u.max_x), max(u.max_y) FROM geoflow_units u JOIN last ON u.run_id = last.run_id
		WHERE u.task = ?2 AND u.state = 'done' AND u.features_inserted + u.features_skipped + u.features_updated > 0`, flow, task).
		Scan(b.dest()...)
	if err != nil {
		return orb.Bound{}, false, translate(fmt.Sprintf("reading the extent of task %q of flow %q", task, flow), err)
	}
	if bd := b.bound(); bd != nil {
		return *bd, true, nil
	}
	return orb.Bound{}, false, nil
}
