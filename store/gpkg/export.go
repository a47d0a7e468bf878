package gpkg

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/migrations"
	"github.com/geoflow/geoflow/store"
)

// An export is a plain GeoPackage: the core tables (the store's first migration), one
// feature table, its R-tree, and nothing of geoflow's bookkeeping. It is written into a
// temporary file beside the target and renamed over it once complete, so that a reader
// of the target (a download, QGIS) sees the old file or the new one, never half of one.
//
// The temporary file is written without a journal and without syncs: nothing else opens
// it, and a failed export deletes it rather than rolling it back. It is synced once,
// whole, after SQLite has closed it and before the rename.

// ExportLayer describes the one feature table of an exported GeoPackage.
type ExportLayer struct {
	// Name is the table's name: a plain identifier (letters, digits and _, at most 63),
	// not starting with gpkg_, rtree_ or sqlite_, which the GeoPackage reserves.
	Name string
	// SRID is the EPSG code of the geometries written (4326 for lon/lat); 0 means
	// undefined geographic coordinates, -1 undefined Cartesian ones. The CRS is recorded
	// with its WKT when the package has it (spatialRefFor), else by its EPSG code alone,
	// which GDAL and QGIS resolve; a number that cannot be an EPSG code is recorded as
	// undefined Cartesian.
	SRID int
	// Columns are the property columns, in order: Name is the column, Property the key
	// in Feature.Properties (defaults to Name), Type how values are written (see
	// DeclaredType for a stored table's columns). Names must be unique, ignoring case,
	// and neither "fid" nor "geom", the table's own columns.
	Columns []store.Column
	// Description is gpkg_contents.description. Defaults to "exported by geoflow".
	Description string
	// SizeHint is about how many features src will yield, when known (0 when not): the
	// R-tree's boxes are then held in one allocation rather than a growing one.
	SizeHint int
}

// exportBatch is how many features one transaction of an export writes.
const exportBatch = 10000

// Export writes a new GeoPackage file at path holding layer l and the features src yields
// (io.EOF ends), and returns how many it wrote.
//
// The file is complete or absent: it is written as a temporary file in path's directory
// and renamed over path (replacing a file there, whose permissions it takes; else it is
// 0644) only once complete: its R-tree built, its extent recorded, the file closed and
// synced. On any error, ctx's cancellation included, the temporary file is removed and
// path is left as it was.
//
// Features are written as src yields them, in transactions of exportBatch, so memory
// does not grow with their number, except for the R-tree's boxes, gathered as the
// features are written and packed in bulk at the end (24 bytes per feature, and 4 more
// while the tree is written). Each feature's geometry is written as it is (nil
// as NULL) in l.SRID; its properties are converted to their columns' types (integers,
// doubles, booleans as 0/1, dates and times as ISO 8601 text, the rest as text), and a
// value that does not fit fails the export with a *store.PropertyError naming the
// feature and the property. The geometry type recorded is the narrowest that fits every
// feature: POINT, ..., MULTIPOLYGON, GEOMETRYCOLLECTION for a mix of multi-geometries
// and collections, else GEOMETRY. Z and M are never written (orb is 2-D).
//
// Export reads src from one goroutine. Exports to different paths may run concurrently;
// two to the same path each leave a complete file there, the later rename winning.
func Export(ctx context.Context, path string, l ExportLayer, src store.FeatureSource) (n int64, err error) {
	if err := checkExportLayer(l); err != nil {
		return 0, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("exporting %s: %w", path, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return 0, fmt.Errorf("exporting %s: it is a directory", abs)
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("exporting %s: creating its temporary file: %w", abs, err)
	}
	tmpPath := tmp.Name()
	renamed := false
	defer func() {
		if !renamed {
			for _, p := range []string{tmpPath, tmpPath + "-journal", tmpPath + "-wal", tmpPath + "-shm"} {
				_ = os.Remove(p)
			}
		}
	}()
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("exporting %s: creating its temporary file: %w", abs, err)
	}
	if n, err = writeExport(ctx, tmpPath, l, src); err != nil {
		return 0, fmt.Errorf("exporting %s to %s: %w", l.Name, abs, err)
	}
	if err := os.Chmod(tmpPath, exportMode(abs)); err != nil {
		return 0, fmt.Errorf("exporting %s to %s: %w", l.Name, abs, err)
	}
	if err := syncFile(tmpPath); err != nil {
		return 0, fmt.Errorf("exporting %s to %s: syncing the file: %w", l.Name, abs, err)
	}
	if err := ctx.Err(); err != nil { // the last moment path can be left as it was
		return 0, fmt.Errorf("exporting %s to %s: %w", l.Name, abs, err)
	}
	if err := os.Rename(tmpPath, abs); err != nil {
		return 0, fmt.Errorf("exporting %s to %s: moving the file into place: %w", l.Name, abs, err)
	}
	renamed = true
	syncDir(filepath.Dir(abs))
	return n, nil
}

// checkExportLayer refuses a layer whose names a GeoPackage cannot hold as asked.
func checkExportLayer(l ExportLayer) error {
	schema, table, err := store.SplitTable(l.Name)
	if err != nil || schema != "public" || table != l.Name {
		return fmt.Errorf("gpkg: exporting %q: not a table name: use letters, digits and _ (at most 63), starting with a letter or _", l.Name)
	}
	for _, p := range []string{"gpkg_", "rtree_", "sqlite_"} {
		if strings.HasPrefix(strings.ToLower(l.Name), p) {
			return fmt.Errorf("gpkg: exporting %q: names starting with %s are reserved by the GeoPackage", l.Name, p)
		}
	}
	seen := map[string]bool{"fid": true, "geom": true}
	for i, c := range l.Columns {
		if c.Name == "" {
			return fmt.Errorf("gpkg: exporting %s: column %d has no name", l.Name, i+1)
		}
		if seen[strings.ToLower(c.Name)] {
			return fmt.Errorf("gpkg: exporting %s: column %q is there twice, or is fid or geom, the table's own (names ignore case)", l.Name, c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
	}
	return nil
}

// writeExport writes the whole GeoPackage into the file at path, which exists and is
// empty, and closes it.
func writeExport(ctx context.Context, path string, l ExportLayer, src store.FeatureSource) (int64, error) {
	// Plain SQLite without a journal or syncs (see above); foreign keys on, so that the
	// GeoPackage's own references are checked as they are written.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return 0, fmt.Errorf("opening the file: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ref, _ := spatialRefFor(l.SRID)
	if err := createExport(ctx, db, l, ref); err != nil {
		return 0, translate("creating the GeoPackage", err)
	}
	leaves := &rtreeLeaves{entries: make([]rtreeEntry, 0, max(l.SizeHint, 0))}
	n, typ, err := streamExport(ctx, db, l, ref.ID, src, leaves)
	if err != nil {
		return n, err
	}
	if err := finishExport(ctx, db, l, typ, leaves); err != nil {
		return n, translate(fmt.Sprintf("indexing %s", l.Name), err)
	}
	if err := db.Close(); err != nil {
		return n, translate("closing the file", err)
	}
	return n, nil
}

// createExport stamps the file as a GeoPackage and creates its core tables, the spatial
// reference systems, and the layer's table, registered with geometry type GEOMETRY
// until its features tell (finishExport).
func createExport(ctx context.Context, db *sql.DB, l ExportLayer, ref spatialRef) error {
	core, err := coreSchema()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	for _, st := range []string{
		fmt.Sprintf("PRAGMA application_id = %d", applicationID),
		fmt.Sprintf("PRAGMA user_version = %d", userVersion),
		core,
		exportTableDDL(l, "GEOMETRY"),
	} {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	for _, r := range append(requiredRefs(), ref) {
		if err := recordSRS(ctx, tx, r); err != nil {
			return err
		}
	}
	desc := l.Description
	if desc == "" {
		desc = "exported by geoflow"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change, srs_id)
		VALUES (?1, 'features', ?1, ?2, `+now+`, ?3)`, l.Name, desc, ref.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO gpkg_geometry_columns (table_name, column_name, geometry_type_name, srs_id, z, m)
		VALUES (?, 'geom', 'GEOMETRY', ?, 0, 0)`, l.Name, ref.ID); err != nil {
		return err
	}
	return tx.Commit()
}

// exportTableDDL creates l's table, its geometry column declared as typ.
func exportTableDDL(l ExportLayer, typ string) string {
	defs := []string{`"fid" INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL`, `"geom" ` + typ}
	for _, c := range l.Columns {
		defs = append(defs, quote(c.Name)+" "+sqlType(c.Type))
	}
	return fmt.Sprintf("CREATE TABLE %s (%s)", quote(l.Name), strings.Join(defs, ", "))
}

// coreSchema is the SQL that creates the GeoPackage's core tables: the store's first
// migration, which creates nothing else.
func coreSchema() (string, error) {
	all, err := migrations.GeoPackage()
	if err != nil {
		return "", err
	}
	if len(all) == 0 || all[0].Version != 1 {
		return "", errors.New("gpkg: the GeoPackage core tables' migration (001) is missing")
	}
	return all[0].Up, nil
}

// streamExport inserts src's features into l's table, exportBatch per transaction, and
// returns how many it inserted and their geometry type (exportGeometryType). The box of
// each geometry goes into leaves, under the fid the row gets (the table is new: its
// rows are numbered from 1), for the R-tree, which finishExport then packs without
// reading the table back.
func streamExport(ctx context.Context, db *sql.DB, l ExportLayer, srs int32, src store.FeatureSource, leaves *rtreeLeaves) (n int64, typ string, err error) {
	what := fmt.Sprintf("inserting into %s", l.Name)
	ins, err := newExportInserter(ctx, db, l)
	if err != nil {
		return 0, "", translate(what, err)
	}
	defer ins.close()
	next := exportNext(src, l)
	for {
		if err := ctx.Err(); err != nil {
			return n, "", err
		}
		f, props, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, "", fmt.Errorf("reading feature #%d: %w", n+1, err)
		}
		if f == nil {
			return n, "", fmt.Errorf("reading feature #%d: the source gave no feature and no error", n+1)
		}
		row, blob := ins.next()
		if blob, err = exportRow(row, blob, f, props, l, srs); err != nil {
			return n, "", fmt.Errorf("feature #%d: %w", n+1, err)
		}
		if row[0] != nil {
			_ = leaves.addBlob(n+1, blob) // appendGeometry's blobs have their envelope
		}
		typ = exportGeometryType(typ, f.Geometry)
		n++
		if err := ins.added(blob); err != nil {
			return n, "", translate(what, err)
		}
	}
	return n, typ, translate(what, ins.finish())
}

// exportRow fills row with f's values for l's table: the geometry blob, appended to
// blob, then the properties. It returns blob, to be reused for the next row.
func exportRow(row []any, blob []byte, f *store.FeatureRow, props map[string]any, l ExportLayer, srs int32) ([]byte, error) {
	row[0] = nil
	if f.Geometry != nil {
		var err error
		if blob, err = appendGeometry(blob, f.Geometry, srs); err != nil {
			return blob, fmt.Errorf("feature %q: encoding its geometry: %w", f.ID, err)
		}
		row[0] = blob
	}
	for i, c := range l.Columns {
		prop := cmp.Or(c.Property, c.Name)
		row[1+i] = nil
		var v any
		if f.Values != nil {
			v = f.Values[i]
		} else {
			v = props[prop]
		}
		if v == nil {
			continue
		}
		val, err := exportValue(v, c.Type)
		if err != nil {
			return blob, &store.PropertyError{FeatureID: f.ID, Property: prop, Type: c.Type, Value: fmt.Sprint(v)}
		}
		row[1+i] = val
	}
	return blob, nil
}

// exportNext returns a function that yields src's next feature: its id and geometry,
// and its properties as Values in l's column order (a store.RowSource's NextRow, which
// spares a map per feature) or, Values nil, by name; io.EOF at the end.
func exportNext(src store.FeatureSource, l ExportLayer) func() (*store.FeatureRow, map[string]any, error) {
	if rs, ok := src.(store.RowSource); ok {
		return func() (*store.FeatureRow, map[string]any, error) {
			r, err := rs.NextRow()
			if err == nil && r != nil && len(r.Values) != len(l.Columns) {
				err = fmt.Errorf("feature %q: %d values for %d columns", r.ID, len(r.Values), len(l.Columns))
			}
			return r, nil, err
		}
	}
	return func() (*store.FeatureRow, map[string]any, error) {
		f, err := src.Next()
		if err != nil || f == nil {
			return nil, nil, err
		}
		return &store.FeatureRow{ID: f.ID, Geometry: f.Geometry}, f.Properties, nil
	}
}

// exportValue is v as its column stores it (columnValue); a time.Time, which a reader of
// a store may hand over, is taken as its RFC 3339 text. A date already written as the
// GeoPackage writes it is kept as it is: columnValue would come to the same after trying
// five other layouts, which took a fifth of the time of writing a feature with a date.
func exportValue(v any, t store.ColumnType) (any, error) {
	if out, ok := exportAsIs(v, t); ok {
		return out, nil
	}
	if x, ok := v.(time.Time); ok {
		v = x.Format(time.RFC3339Nano)
	}
	return columnValue(v, t)
}

// exportAsIs is v as columnValue stores it in a column of type t, for the values a
// store reads or a reader decodes (text as text, an int64 or a float64 as a number, a
// bool as a boolean, a date or a time as the GeoPackage's text), without its way through
// text; ok false for any other, which columnValue converts. columnValue's way cost a
// million-row export four seconds, and a harvest 5 µs per feature of ten properties.
func exportAsIs(v any, t store.ColumnType) (any, bool) {
	// v itself is returned where it is already the value stored: boxing it again would
	// allocate.
	switch x := v.(type) {
	case string:
		switch t {
		case store.TypeText, "":
			return v, true
		case store.TypeDate:
			if validDateTime(x, false) {
				return v, true
			}
		case store.TypeTimestamptz:
			if validDateTime(x, true) { // the store's form but for the milliseconds
				return x[:19] + ".000Z", true
			}
			// parseDate's first layout, which every time a store reads is in.
			if d, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return ts(d), true
			}
		}
	case int64:
		switch t {
		case store.TypeBigint:
			return v, true
		case store.TypeDouble, store.TypeNumeric:
			return float64(x), true // as ParseFloat rounds its text
		}
	case float64:
		switch t {
		case store.TypeDouble, store.TypeNumeric:
			return v, true
		case store.TypeBigint:
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return int64(x), true
			}
		}
	case bool:
		if t == store.TypeBoolean {
			return v, true
		}
	}
	return nil, false
}

// validDateTime tells whether s is a date YYYY-MM-DD that time.Parse takes (month and day
// in range), or with withTime that followed by THH:MM:SSZ, as servers send most dates
// and times: those need no parse to be stored.
func validDateTime(s string, withTime bool) bool {
	n := 10
	if withTime {
		n = 20
	}
	if len(s) != n || s[4] != '-' || s[7] != '-' {
		return false
	}
	num := func(i, j int) (int, bool) {
		v := 0
		for k := i; k < j; k++ {
			c := s[k]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	y, ok1 := num(0, 4)
	m, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return false
	}
	if !withTime {
		return true
	}
	if s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return false
	}
	hh, ok1 := num(11, 13)
	mm, ok2 := num(14, 16)
	ss, ok3 := num(17, 19)
	return ok1 && ok2 && ok3 && hh < 24 && mm < 60 && ss < 60
}

// daysIn is the number of days of month m of year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// finishExport records the geometry type of the layer's features (typ, "" for none),
// builds its R-tree in bulk and then the triggers that keep it current, as the store's
// FinishFeatureTable does, and records the layer's extent: exact, as bulkRTree finds it.
func finishExport(ctx context.Context, db *sql.DB, l ExportLayer, typ string, leaves *rtreeLeaves) error {
	name := l.Name
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	if typ != "" && typ != "GEOMETRY" {
		if err := declareGeometryType(ctx, tx, l, typ); err != nil {
			return fmt.Errorf("declaring its geometry type: %w", err)
		}
	}
	ddl := rtreeDDL(name, "geom")
	if _, err := tx.ExecContext(ctx, ddl[0]); err != nil {
		return err
	}
	ext, ok, err := exportRTree(ctx, tx, name, leaves)
	if err != nil {
		return fmt.Errorf("packing the R-tree: %w", err)
	}
	for _, st := range ddl[1:] {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	e := []any{nil, nil, nil, nil}
	if ok {
		e = []any{ext.Min[0], ext.Max[0], ext.Min[1], ext.Max[1]}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE gpkg_contents SET last_change = `+now+`, min_x = ?, max_x = ?, min_y = ?, max_y = ?
		WHERE table_name = ?`, append(e, name)...); err != nil {
		return err
	}
	return tx.Commit()
}

// exportRTree fills the new R-tree of table name with leaves, whose ids are the fids
// the rows were numbered with, checked: when the table's rows are not numbered 1 to n,
// the boxes are read back from the table instead (bulkRTree).
func exportRTree(ctx context.Context, tx *sql.Tx, name string, leaves *rtreeLeaves) (orb.Bound, bool, error) {
	var count, last sql.NullInt64
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), max(fid) FROM %s`, quote(name))).Scan(&count, &last); err != nil {
		return orb.Bound{}, false, err
	}
	if count.Int64 != last.Int64 {
		return bulkRTree(ctx, tx, name, "geom", "rtree_"+name+"_geom")
	}
	return leaves.ext, leaves.ok, leaves.write(ctx, tx, "rtree_"+name+"_geom")
}

// declareGeometryType makes typ the geometry type of l's table, which was created as
// GEOMETRY: in gpkg_geometry_columns, and as the geom column's declared type, which the
// GeoPackage requires to be the same (requirement 31) and SQLite cannot alter. The
// table's definition is rewritten in sqlite_schema, as SQLite documents for changes that
// leave what is stored as it is (https://sqlite.org/lang_altertable.html#otheralter):
// geometries are blobs, which no declared type converts, and no index covers the column.
// A new table and a copy of every row would cost the whole write again.
func declareGeometryType(ctx context.Context, tx *sql.Tx, l ExportLayer, typ string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE gpkg_geometry_columns SET geometry_type_name = ? WHERE table_name = ?`, typ, l.Name); err != nil {
		return err
	}
	var version int64
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&version); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA writable_schema = ON"); err != nil {
		return err
	}
	r, err := tx.ExecContext(ctx, "UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?", exportTableDDL(l, typ), l.Name)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("the table's definition was not found (%d rows, %v)", n, err)
	}
	// A new schema version makes SQLite read the schema again.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", version+1)); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "PRAGMA writable_schema = OFF")
	return err
}

// exportGeometryType is the narrowest GeoPackage geometry type name of a layer whose
// features so far have type typ ("" before the first geometry) once it also holds g: the
// type both share; GEOMETRYCOLLECTION for two of the multi-geometries and collections,
// which are all collections; else GEOMETRY. A nil g changes nothing; an empty geometry
// has its type; orb.Ring and orb.Bound are written as polygons.
func exportGeometryType(typ string, g orb.Geometry) string {
	if g == nil {
		return typ
	}
	var t string
	switch g.(type) {
	case orb.Point:
		t = "POINT"
	case orb.LineString:
		t = "LINESTRING"
	case orb.Polygon, orb.Ring, orb.Bound:
		t = "POLYGON"
	case orb.MultiPoint:
		t = "MULTIPOINT"
	case orb.MultiLineString:
		t = "MULTILINESTRING"
	case orb.MultiPolygon:
		t = "MULTIPOLYGON"
	case orb.Collection:
		t = "GEOMETRYCOLLECTION"
	default:
		t = "GEOMETRY"
	}
	collection := func(s string) bool { return s == "GEOMETRYCOLLECTION" || strings.HasPrefix(s, "MULTI") }
	switch {
	case typ == "" || typ == t:
		return t
	case collection(typ) && collection(t):
		return "GEOMETRYCOLLECTION"
	}
	return "GEOMETRY"
}

// exportMode is the permissions an export to path gets: those of the file it replaces,
// else 0644 (a temporary file is made 0600).
func exportMode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return 0o644
}

// syncFile flushes the file at path to its disk.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	serr := f.Sync()
	return errors.Join(serr, f.Close())
}

// syncDir flushes dir, so that a rename in it lasts. It is best effort: the file is in
// place whatever it answers, and some systems cannot sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
