package gpkg

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/store"
)

// tableName is the GeoPackage name of a target table: GeoPackages have no schemas, so a
// schema other than public becomes a prefix ("staging.parcels" is "staging_parcels").
func tableName(schema, name string) string {
	if schema == "" || schema == "public" {
		return name
	}
	return schema + "_" + name
}

// quote quotes an SQLite identifier. Table and column names come from flows, checked by
// store.SplitTable and the tasks' laundering, and are quoted whatever they hold.
func quote(id string) string { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }

// sqlType is the GeoPackage column type for a property type (GeoPackage allows a fixed
// list: TEXT, INTEGER, DOUBLE, BOOLEAN, DATE, DATETIME, BLOB ...). numeric becomes DOUBLE,
// as GDAL does; jsonb is TEXT holding JSON.
func sqlType(t store.ColumnType) string {
	switch t {
	case store.TypeBigint:
		return "INTEGER"
	case store.TypeDouble, store.TypeNumeric:
		return "DOUBLE"
	case store.TypeBoolean:
		return "BOOLEAN"
	case store.TypeDate:
		return "DATE"
	case store.TypeTimestamptz:
		return "DATETIME"
	}
	return "TEXT"
}

// bookkeeping columns of a feature table, after the properties.
var featureColumns = map[string]string{
	"fid": "INTEGER", "geom": "GEOMETRY", "gf_feature_id": "TEXT", "gf_payload_hash": "BLOB",
	"gf_run_id": "INTEGER", "gf_fetched_at": "DATETIME",
}

// EnsureFeatureTable implements store.FeatureTables: a GeoPackage feature table (fid,
// geom, the properties, geoflow's columns), registered in gpkg_contents and
// gpkg_geometry_columns with its SRS. The R-tree of a new table waits for
// FinishFeatureTable; an existing table gets it now if it has none.
func (s *Store) EnsureFeatureTable(ctx context.Context, t *store.FeatureTable) error {
	name := tableName(t.Schema, t.Name)
	want := map[string]string{}
	for k, v := range featureColumns {
		want[k] = v
	}
	for _, c := range t.Columns {
		want[c.Name] = sqlType(c.Type)
	}
	have, err := s.columns(ctx, name)
	if err != nil {
		return err
	}
	if len(have) > 0 {
		if problems := store.ColumnProblems(want, have); len(problems) > 0 {
			return &store.IncompatibleTableError{Table: name, Problems: problems}
		}
		if err := s.ensureKeys(ctx, t, name); err != nil {
			return err
		}
		return s.FinishFeatureTable(ctx, t)
	}
	ref, known := spatialRefFor(t.SRID)
	if !known && t.SRID > 0 {
		slog.Info("the GeoPackage records this CRS by its EPSG code only; GDAL and QGIS resolve it from their own EPSG database",
			"table", name, "srid", t.SRID)
	}
	defs := []string{`"fid" INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL`, `"geom" GEOMETRY`}
	for _, c := range t.Columns {
		defs = append(defs, quote(c.Name)+" "+sqlType(c.Type))
	}
	defs = append(defs, `"gf_feature_id" TEXT`, `"gf_payload_hash" BLOB NOT NULL`, `"gf_run_id" INTEGER`,
		`"gf_fetched_at" DATETIME NOT NULL`)
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := s.ensureSRS(ctx, tx, ref); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", quote(name), strings.Join(defs, ", "))); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change, srs_id)
			VALUES (?1, 'features', ?1, 'harvested by geoflow', `+now+`, ?2)`, name, ref.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO gpkg_geometry_columns (table_name, column_name, geometry_type_name, srs_id, z, m)
			VALUES (?, 'geom', 'GEOMETRY', ?, 0, 0)`, name, ref.ID)
		return err
	})
	if err != nil {
		return translate(fmt.Sprintf("creating table %s", name), err)
	}
	return s.ensureKeys(ctx, t, name)
}

// columns returns a table's columns and declared types, none when it does not exist.
func (s *Store) columns(ctx context.Context, name string) (map[string]string, error) {
	rows, err := s.w.QueryContext(ctx, `SELECT name, upper(type) FROM pragma_table_info(?)`, name)
	if err != nil {
		return nil, translate(fmt.Sprintf("inspecting table %s", name), err)
	}
	defer rows.Close()
	have := map[string]string{}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			return nil, translate(fmt.Sprintf("inspecting table %s", name), err)
		}
		have[col] = typ
	}
	return have, translate(fmt.Sprintf("inspecting table %s", name), rows.Err())
}

// ensureKeys creates the key indexes, which must exist before the first write: the
// payload hash, unique in append mode; the upsert key, unique in upsert mode.
func (s *Store) ensureKeys(ctx context.Context, t *store.FeatureTable, name string) error {
	var stmts []string
	if t.Mode == store.ModeUpsert {
		keys := make([]string, len(t.Key))
		for i, k := range t.Key {
			keys[i] = quote(k)
		}
		stmts = append(stmts,
			fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (%s)", quote(name+"_gf_key"), quote(name), strings.Join(keys, ", ")),
			fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s (gf_payload_hash)", quote(name+"_gf_payload_hash_idx"), quote(name)))
	} else {
		stmts = append(stmts, fmt.Sprintf("CREATE UNIQUE INDEX IF NOT EXISTS %s ON %s (gf_payload_hash)", quote(name+"_gf_payload_hash_key"), quote(name)))
	}
	for _, st := range stmts {
		if _, err := s.w.ExecContext(ctx, st); err != nil {
			return translate(fmt.Sprintf("indexing table %s", name), err)
		}
	}
	return nil
}

// FinishFeatureTable implements store.FeatureTables: it builds the R-tree of a table that
// has none, packed in bulk over the rows already loaded (see bulkRTree: a fraction of
// what a trigger or an insert per row costs), adds the triggers that keep it current
// from then on, as GDAL does, and records the table's extent in gpkg_contents: exact when
// the tree is built, the R-tree's afterwards (single-precision boxes rounded outward, so
// it may be wider than the data by a float32 step, never narrower).
func (s *Store) FinishFeatureTable(ctx context.Context, t *store.FeatureTable) error {
	return s.finishSpatial(ctx, tableName(t.Schema, t.Name), "geom")
}

func (s *Store) finishSpatial(ctx context.Context, name, col string) error {
	rtree := "rtree_" + name + "_" + col
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = ?", rtree).Scan(&n); err != nil {
			return err
		}
		if n > 0 { // kept current by its triggers: the extent is the R-tree's
			_, err := tx.ExecContext(ctx, `UPDATE gpkg_contents SET last_change = `+now+`,
				(min_x, max_x, min_y, max_y) = (SELECT min(minx), max(maxx), min(miny), max(maxy) FROM `+quote(rtree)+`)
				WHERE table_name = ?`, name)
			return err
		}
		ddl := rtreeDDL(name, col)
		if _, err := tx.ExecContext(ctx, ddl[0]); err != nil {
			return err
		}
		ext, ok, err := bulkRTree(ctx, tx, name, col, rtree)
		if err != nil {
			return fmt.Errorf("packing the R-tree: %w", err)
		}
		for _, st := range ddl[1:] {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		var e []any
		if ok {
			e = []any{ext.Min[0], ext.Max[0], ext.Min[1], ext.Max[1]}
		} else {
			e = []any{nil, nil, nil, nil}
		}
		_, err = tx.ExecContext(ctx, `UPDATE gpkg_contents SET last_change = `+now+`, min_x = ?, max_x = ?, min_y = ?, max_y = ?
			WHERE table_name = ?`, append(e, name)...)
		return err
	})
	return translate(fmt.Sprintf("building the spatial index of %s", name), err)
}

// rtreeDDL creates the R-tree of name.col (the first statement; bulkRTree fills it),
// then its triggers, which are GDAL's (GeoPackage 1.2 and later), and registers it
// (gpkg_rtree_index).
func rtreeDDL(name, col string) []string {
	rt, t, c := quote("rtree_"+name+"_"+col), quote(name), quote(col)
	trig := func(suffix string) string { return quote("rtree_" + name + "_" + col + "_" + suffix) }
	vals := fmt.Sprintf(`NEW."fid", ST_MinX(NEW.%[1]s), ST_MaxX(NEW.%[1]s), ST_MinY(NEW.%[1]s), ST_MaxY(NEW.%[1]s)`, c)
	return []string{
		fmt.Sprintf(`CREATE VIRTUAL TABLE %s USING rtree(id, minx, maxx, miny, maxy)`, rt),
		fmt.Sprintf(`CREATE TRIGGER %s AFTER INSERT ON %s WHEN (new.%s NOT NULL AND NOT ST_IsEmpty(NEW.%[3]s))
			BEGIN INSERT OR REPLACE INTO %s VALUES (%s); END`, trig("insert"), t, c, rt, vals),
		fmt.Sprintf(`CREATE TRIGGER %s AFTER UPDATE OF %s ON %s WHEN OLD."fid" = NEW."fid" AND (NEW.%[2]s NOTNULL AND NOT ST_IsEmpty(NEW.%[2]s))
			BEGIN INSERT OR REPLACE INTO %[4]s VALUES (%[5]s); END`, trig("update1"), c, t, rt, vals),
		fmt.Sprintf(`CREATE TRIGGER %s AFTER UPDATE OF %s ON %s WHEN OLD."fid" = NEW."fid" AND (NEW.%[2]s ISNULL OR ST_IsEmpty(NEW.%[2]s))
			BEGIN DELETE FROM %[4]s WHERE id = OLD."fid"; END`, trig("update2"), c, t, rt),
		fmt.Sprintf(`CREATE TRIGGER %s AFTER UPDATE ON %s WHEN OLD."fid" != NEW."fid" AND (NEW.%s NOTNULL AND NOT ST_IsEmpty(NEW.%[3]s))
			BEGIN DELETE FROM %s WHERE id = OLD."fid"; INSERT OR REPLACE INTO %[4]s VALUES (%s); END`, trig("update3"), t, c, rt, vals),
		fmt.Sprintf(`CREATE TRIGGER %s AFTER UPDATE ON %s WHEN OLD."fid" != NEW."fid" AND (NEW.%s ISNULL OR ST_IsEmpty(NEW.%[3]s))
			BEGIN DELETE FROM %s WHERE id IN (OLD."fid", NEW."fid"); END`, trig("update4"), t, c, rt),
		fmt.Sprintf(`CREATE TRIGGER %s AFTER DELETE ON %s WHEN old.%s NOT NULL
			BEGIN DELETE FROM %s WHERE id = OLD."fid"; END`, trig("delete"), t, c, rt),
		fmt.Sprintf(`INSERT INTO gpkg_extensions (table_name, column_name, extension_name, definition, scope)
			VALUES ('%s', '%s', 'gpkg_rtree_index', 'http://www.geopackage.org/spec120/#extension_rtree', 'write-only')
			ON CONFLICT DO NOTHING`, strings.ReplaceAll(name, "'", "''"), strings.ReplaceAll(col, "'", "''")),
	}
}

// CountFeatures implements store.FeatureTables: distinct feature ids (or payloads) whose
// geometry's box overlaps bbox, found through the R-tree.
func (s *Store) CountFeatures(ctx context.Context, t *store.FeatureTable, bbox orb.Bound) (int64, error) {
	name := tableName(t.Schema, t.Name)
	switch t.SRID {
	case 0, 4326:
	case 3857, 900913:
		bbox = orb.Bound{Min: project.WGS84.ToMercator(bbox.Min), Max: project.WGS84.ToMercator(bbox.Max)}
	default:
		return 0, fmt.Errorf("counting features in %s (EPSG:%d): %w", name, t.SRID, store.ErrNoTransform)
	}
	var n, indexed int64
	rtree := "rtree_" + name + "_geom"
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = ?", rtree).Scan(&indexed); err != nil {
		return 0, translate(fmt.Sprintf("counting features in %s", name), err)
	}
	// A table FinishFeatureTable has not indexed yet is counted row by row.
	match := fmt.Sprintf("fid IN (SELECT id FROM %s WHERE minx <= ? AND maxx >= ? AND miny <= ? AND maxy >= ?)", quote(rtree))
	if indexed == 0 {
		match = "ST_MinX(geom) <= ? AND ST_MaxX(geom) >= ? AND ST_MinY(geom) <= ? AND ST_MaxY(geom) >= ?"
	}
	err := s.r.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(DISTINCT coalesce(gf_feature_id, hex(gf_payload_hash))) FROM %s WHERE %s`,
		quote(name), match), bbox.Max[0], bbox.Min[0], bbox.Max[1], bbox.Min[1]).Scan(&n)
	return n, translate(fmt.Sprintf("counting features in %s", name), err)
}
