package postgis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"

	"github.com/geoflow/geoflow/store"
)

// The index tables of files on disk (map tiles, imagery). The files themselves are written
// by the tasks, atomically (temp file, fsync, rename), inside CommitUnit's write function
// and before the row: a crash between the rename and the commit leaves a file without a
// row, which the next run does not trust (no row, so no revalidation) and overwrites. A
// row never points at a file that is not complete.

var (
	_ store.TileStore  = (*Store)(nil)
	_ store.AssetStore = (*Store)(nil)
)

// tileColumns are the columns of a tile table and their format_type names.
var tileColumns = map[string]string{
	"z": "integer", "x": "integer", "y": "integer", "footprint": "geometry",
	"status": "text", "path": "text", "content_hash": "bytea", "bytes": "bigint",
	"content_type": "text", "etag": "text", "last_modified": "text",
	"fetched_at": "timestamp with time zone", "gf_run_id": "bigint",
}

// assetColumns are the columns of an asset table and their format_type names.
var assetColumns = map[string]string{
	"collection": "text", "item": "text", "asset": "text", "footprint": "geometry",
	"datetime": "timestamp with time zone", "properties": "jsonb", "href": "text", "path": "text",
	"content_hash": "bytea", "checksum": "text", "bytes": "bigint", "content_type": "text",
	"etag": "text", "last_modified": "text", "fetched_at": "timestamp with time zone", "gf_run_id": "bigint",
}

// bookkeepingAssetColumns are the columns of a bookkeeping asset table: an asset
// table's, its footprint EWKB.
var bookkeepingAssetColumns = func() map[string]string {
	m := maps.Clone(assetColumns)
	m["footprint"] = "bytea"
	return m
}()

// assetTarget is t's schema and its qualified name: the bookkeeping schema for
// geoflow's own record (store.AssetTable.Bookkeeping).
func (s *Store) assetTarget(t *store.AssetTable) (string, string) {
	if t.Bookkeeping {
		return qualified(s.schema, t.Name)
	}
	return qualified(t.Schema, t.Name)
}

func qualified(schema, name string) (string, string) {
	if schema == "" {
		schema = "public"
	}
	return schema, pgx.Identifier{schema, name}.Sanitize()
}

// EnsureTileTable implements store.TileStore.
func (s *Store) EnsureTileTable(ctx context.Context, t *store.TileTable) error {
	if t.InStore {
		return fmt.Errorf("table %s: tiles kept in the store (storage: geopackage) need a GeoPackage store; PostGIS keeps tile files (storage: files, target.dir)", t.Name)
	}
	schema, target := qualified(t.Schema, t.Name)
	create := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		z integer NOT NULL, x integer NOT NULL, y integer NOT NULL,
		footprint geometry(Polygon, 4326) NOT NULL,
		status text NOT NULL,
		path text,
		content_hash bytea,
		bytes bigint NOT NULL DEFAULT 0,
		content_type text,
		etag text,
		last_modified text,
		fetched_at timestamptz NOT NULL DEFAULT now(),
		gf_run_id bigint)`, target)
	return s.ensureFileTable(ctx, schema, t.Name, tileColumns, create, []string{"z", "x", "y"})
}

// EnsureAssetTable implements store.AssetStore.
func (s *Store) EnsureAssetTable(ctx context.Context, t *store.AssetTable) error {
	schema, target := s.assetTarget(t)
	footprint, want := "geometry(Geometry, 4326)", assetColumns
	if t.Bookkeeping {
		footprint, want = "bytea", bookkeepingAssetColumns
	}
	create := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		collection text NOT NULL, item text NOT NULL, asset text NOT NULL,
		footprint %s,
		datetime timestamptz,
		properties jsonb,
		href text,
		path text,
		content_hash bytea,
		checksum text,
		bytes bigint NOT NULL DEFAULT 0,
		content_type text,
		etag text,
		last_modified text,
		fetched_at timestamptz NOT NULL DEFAULT now(),
		gf_run_id bigint)`, target, footprint)
	return s.ensureFileTable(ctx, schema, t.Name, want, create, []string{"collection", "item", "asset"})
}

// ensureFileTable checks an existing table's columns against want, or creates it, then
// makes sure of its unique key and its footprint index.
func (s *Store) ensureFileTable(ctx context.Context, schema, name string, want map[string]string, create string, key []string) error {
	return s.ddl(ctx, func() error { return s.ensureFileTableLocked(ctx, schema, name, want, create, key) })
}

func (s *Store) ensureFileTableLocked(ctx context.Context, schema, name string, want map[string]string, create string, key []string) error {
	target := pgx.Identifier{schema, name}.Sanitize()
	rows, err := s.pool.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, NULL)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped`, schema, name)
	if err != nil {
		return translate(fmt.Sprintf("inspecting table %s", target), err)
	}
	have := map[string]string{}
	var col, typ string
	if _, err := pgx.ForEachRow(rows, []any{&col, &typ}, func() error { have[col] = typ; return nil }); err != nil {
		return translate(fmt.Sprintf("inspecting table %s", target), err)
	}
	if len(have) > 0 {
		if problems := store.ColumnProblems(want, have); len(problems) > 0 {
			return &store.IncompatibleTableError{Table: target, Problems: problems}
		}
	} else {
		if _, err := s.pool.Exec(ctx, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s", pgx.Identifier{schema}.Sanitize())); err != nil {
			return translate(fmt.Sprintf("creating schema %q", schema), err)
		}
		if _, err := s.pool.Exec(ctx, create); err != nil {
			return translate(fmt.Sprintf("creating table %s", target), err)
		}
	}
	idx := func(suffix string) string { return pgx.Identifier{indexName(name, suffix)}.Sanitize() }
	stmts := []string{fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s)", idx("gf_key"), target, strings.Join(key, ", "))}
	if want["footprint"] == "geometry" {
		stmts = append(stmts, fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING gist (footprint)", idx("footprint_idx"), target))
	}
	for _, st := range stmts {
		if _, err := s.pool.Exec(ctx, st); err != nil {
			return translate(fmt.Sprintf("indexing table %s", target), err)
		}
	}
	return nil
}

// indexName keeps an index name within PostgreSQL's 63 bytes, as ensureIndexes does.
func indexName(table, suffix string) string {
	name := table + "_" + suffix
	if len(name) > 63 {
		name = name[:50] + "_" + fmt.Sprintf("%08x", fnv32(name))
	}
	return name
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// LookupTiles implements store.TileStore.
func (s *Store) LookupTiles(ctx context.Context, t *store.TileTable, r store.TileRange) (map[[2]int]*store.StoredFile, error) {
	_, target := qualified(t.Schema, t.Name)
	what := fmt.Sprintf("looking up tiles %d/%d-%d/%d-%d in %s", r.Z, r.X0, r.X1, r.Y0, r.Y1, target)
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT x, y, status, coalesce(path, ''), content_hash, bytes, coalesce(etag, ''), coalesce(last_modified, '')
		FROM %s WHERE z = $1 AND x BETWEEN $2 AND $3 AND y BETWEEN $4 AND $5`, target), r.Z, r.X0, r.X1, r.Y0, r.Y1)
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
	_, target := s.assetTarget(t)
	return s.lookupFile(ctx, target, fmt.Sprintf("asset %s/%s/%s", collection, item, asset),
		fmt.Sprintf(`SELECT 'ok', coalesce(path, ''), content_hash, bytes, coalesce(etag, ''), coalesce(last_modified, '')
		FROM %s WHERE collection = $1 AND item = $2 AND asset = $3`, target), collection, item, asset)
}

func (s *Store) lookupFile(ctx context.Context, target, what, sql string, args ...any) (*store.StoredFile, error) {
	var f store.StoredFile
	err := s.pool.QueryRow(ctx, sql, args...).Scan(&f.Status, &f.Path, &f.Hash, &f.Bytes, &f.ETag, &f.LastModified)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, translate(fmt.Sprintf("looking up %s in %s", what, target), err)
	}
	return &f, nil
}

// UpsertTiles implements store.UnitTx: one INSERT of every row, from arrays.
func (u *unitTx) UpsertTiles(ctx context.Context, t *store.TileTable, rows []store.TileRow) (store.Counts, error) {
	if err := u.flush(ctx); err != nil {
		return store.Counts{}, err
	}
	rows = store.DistinctTiles(rows)
	if len(rows) == 0 {
		return store.Counts{}, nil
	}
	_, target := qualified(t.Schema, t.Name)
	n := len(rows)
	var (
		z, x, y                            = make([]int32, n), make([]int32, n), make([]int32, n)
		x0, y0, x1, y1                     = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		status, path, ctype, etag, lastMod = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		hash                               = make([][]byte, n)
		size                               = make([]int64, n)
		bytesOf                            = map[[3]int]int64{}
	)
	for i, r := range rows {
		z[i], x[i], y[i] = int32(r.Z), int32(r.X), int32(r.Y)
		x0[i], y0[i], x1[i], y1[i] = r.Footprint.Min[0], r.Footprint.Min[1], r.Footprint.Max[0], r.Footprint.Max[1]
		status[i], path[i], ctype[i], etag[i], lastMod[i] = r.Status, r.Path, r.ContentType, r.ETag, r.LastModified
		hash[i], size[i] = r.Hash, r.Bytes
		bytesOf[[3]int{r.Z, r.X, r.Y}] = r.Bytes
	}
	what := fmt.Sprintf("recording %d tiles (%d/%d/%d first) in %s", n, rows[0].Z, rows[0].X, rows[0].Y, target)
	if n == 1 {
		what = fmt.Sprintf("recording tile %d/%d/%d in %s", rows[0].Z, rows[0].X, rows[0].Y, target)
	}
	res, err := u.tx.Query(ctx, fmt.Sprintf(`INSERT INTO %s AS t (z, x, y, footprint, status, path, content_hash, bytes, content_type, etag, last_modified, fetched_at, gf_run_id)
		SELECT z, x, y, ST_MakeEnvelope(x0, y0, x1, y1, 4326), status, NULLIF(path, ''), hash, bytes, NULLIF(ctype, ''), NULLIF(etag, ''), NULLIF(lm, ''), now(), $15
		FROM unnest($1::int[], $2::int[], $3::int[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::text[], $9::text[],
			$10::bytea[], $11::bigint[], $12::text[], $13::text[], $14::text[]) AS v(z, x, y, x0, y0, x1, y1, status, path, hash, bytes, ctype, etag, lm)
		ON CONFLICT (z, x, y) DO UPDATE SET footprint = EXCLUDED.footprint, status = EXCLUDED.status, path = EXCLUDED.path,
			content_hash = EXCLUDED.content_hash, bytes = EXCLUDED.bytes, content_type = EXCLUDED.content_type,
			etag = EXCLUDED.etag, last_modified = EXCLUDED.last_modified, fetched_at = now(), gf_run_id = EXCLUDED.gf_run_id
		RETURNING z, x, y, (xmax = 0)`, target),
		z, x, y, x0, y0, x1, y1, status, path, hash, size, ctype, etag, lastMod, u.ref.RunID)
	if err != nil {
		return store.Counts{}, translate(what, err)
	}
	defer res.Close()
	var c store.Counts
	for res.Next() {
		var rz, rx, ry int
		var inserted bool
		if err := res.Scan(&rz, &rx, &ry, &inserted); err != nil {
			return store.Counts{}, translate(what, err)
		}
		if inserted {
			c.Inserted++
		} else {
			c.Updated++
		}
		c.Bytes += bytesOf[[3]int{rz, rx, ry}]
	}
	if err := res.Err(); err != nil {
		return store.Counts{}, translate(what, err)
	}
	return c, nil
}

// UpsertAsset implements store.UnitTx.
func (u *unitTx) UpsertAsset(ctx context.Context, t *store.AssetTable, r store.AssetRow) (store.Counts, error) {
	if err := u.flush(ctx); err != nil {
		return store.Counts{}, err
	}
	_, target := u.s.assetTarget(t)
	footprint := "ST_GeomFromWKB($4, 4326)"
	if t.Bookkeeping {
		footprint = "ST_AsEWKB(ST_GeomFromWKB($4, 4326))"
	}
	var fp []byte
	if r.Footprint != nil {
		b, err := wkb.Marshal(r.Footprint)
		if err != nil {
			return store.Counts{}, fmt.Errorf("asset %s/%s: encoding its footprint: %w", r.Item, r.Asset, err)
		}
		fp = b
	}
	props := []byte(r.Properties)
	if len(props) == 0 {
		props = nil
	}
	sql := fmt.Sprintf(`INSERT INTO %s AS t (collection, item, asset, footprint, datetime, properties, href, path, content_hash,
			checksum, bytes, content_type, etag, last_modified, fetched_at, gf_run_id)
		VALUES ($1, $2, $3, %s, $5, $6::jsonb, NULLIF($7, ''), NULLIF($8, ''), $9,
			NULLIF($10, ''), $11, NULLIF($12, ''), NULLIF($13, ''), NULLIF($14, ''), now(), $15)
		ON CONFLICT (collection, item, asset) DO UPDATE SET footprint = EXCLUDED.footprint, datetime = EXCLUDED.datetime,
			properties = EXCLUDED.properties, href = EXCLUDED.href, path = EXCLUDED.path, content_hash = EXCLUDED.content_hash,
			checksum = EXCLUDED.checksum, bytes = EXCLUDED.bytes, content_type = EXCLUDED.content_type, etag = EXCLUDED.etag,
			last_modified = EXCLUDED.last_modified, fetched_at = now(), gf_run_id = EXCLUDED.gf_run_id
		RETURNING (xmax = 0)`, target, footprint)
	var propArg any
	if props != nil {
		propArg = string(props)
	}
	var inserted bool
	err := u.tx.QueryRow(ctx, sql, r.Collection, r.Item, r.Asset, fp, r.Datetime, propArg, r.Href, r.Path, r.Hash,
		r.Checksum, r.Bytes, r.ContentType, r.ETag, r.LastModified, u.ref.RunID).Scan(&inserted)
	if err != nil {
		return store.Counts{}, translate(fmt.Sprintf("recording asset %s/%s/%s in %s", r.Collection, r.Item, r.Asset, target), err)
	}
	if inserted {
		return store.Counts{Inserted: 1, Bytes: r.Bytes}, nil
	}
	return store.Counts{Updated: 1, Bytes: r.Bytes}, nil
}

// TaskExtent implements tasks.Records: the extent of the units that stored something
// (inserted, skipped or updated features or files) in the latest run of flow where task
// finished done. For a WFS harvest these are the leaf tiles that held features, which
// bound its table's features up to the geometries reaching over a tile's edge.
func (s *Store) TaskExtent(ctx context.Context, flow, task string) (orb.Bound, bool, error) {
	var x0, y0, x1, y1 *float64
	err := s.pool.QueryRow(ctx, `
		WITH last AS (
			SELECT t.run_id FROM geoflow_run_tasks t JOIN geoflow_runs r ON r.id = t.run_id
			WHERE r.flow = $1 AND t.task = $2 AND t.state = 'done' ORDER BY t.run_id DESC LIMIT 1),
		e AS (
			SELECT ST_Extent(ST_GeomFromEWKB(u.bbox))::geometry AS g FROM geoflow_units u JOIN last ON u.run_id = last.run_id
			WHERE u.task = $2 AND u.state = 'done' AND u.features_inserted + u.features_skipped + u.features_updated > 0)
		SELECT ST_XMin(g), ST_YMin(g), ST_XMax(g), ST_YMax(g) FROM e`, flow, task).Scan(&x0, &y0, &x1, &y1)
	if err != nil {
		return orb.Bound{}, false, translate(fmt.Sprintf("reading the extent of task %q of flow %q", task, flow), err)
	}
	if x0 == nil {
		return orb.Bound{}, false, nil
	}
	return orb.Bound{Min: orb.Point{*x0, *y0}, Max: orb.Point{*x1, *y1}}, true, nil
}
