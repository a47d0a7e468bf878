package export

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/store"
)

// Prepare resolves spec against the store: its format, the table (which must be a
// feature table geoflow wrote: an unknown one fails naming the stored ones, wrapping
// store.ErrNotFound), the columns (an unknown one fails with the nearest name), the CRS
// and the where expression (store.CheckWhere). It reads the table's description, not
// its rows. A spec.Query is checked, not run: its columns are known as it is written.
func Prepare(ctx context.Context, spec Spec, r Reader) (*Job, error) {
	f, err := FormatOf(spec.Path, spec.Format)
	if err != nil {
		return nil, err
	}
	if spec.Query != "" {
		return prepareQuery(spec, f, r)
	}
	if spec.Where != "" {
		if spec.Changes != nil {
			return nil, errors.New("export: where selects rows of a table, not changes: leave it out of a changes export")
		}
		if err := store.CheckWhere(spec.Where); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	j := &Job{spec: spec, format: f, r: r}
	if j.table, err = j.resolveTable(ctx); err != nil {
		return nil, err
	}
	if j.cols, err = layerColumns(j.table, spec.Columns, f, spec.Changes != nil); err != nil {
		return nil, err
	}
	read := j.table.SRID
	if spec.Changes != nil {
		read = j.changesSRID(ctx)
	}
	if j.srid, read, err = crsFor(f, read, spec.SRID, spec.Changes != nil); err != nil {
		return nil, fmt.Errorf("export: %s: %w", j.what(), err)
	}
	// A file holds the features, not the store's bookkeeping; a FlatGeobuf's index
	// orders them itself, so the store need not.
	j.query = store.FeatureQuery{BBox: spec.BBox, SRID: read, Where: spec.Where, FeaturesOnly: true, AnyOrder: f == FlatGeobuf}
	return j, nil
}

// resolveTable finds the stored table of the job: spec.Table, or for changes without
// one, the table of the run's first change (the zero table when it changed nothing).
func (j *Job) resolveTable(ctx context.Context) (store.StoredTable, error) {
	name := j.spec.Table
	if name == "" && j.spec.Changes != nil {
		stop := errors.New("found")
		err := j.r.ListChanges(ctx, store.ChangeFilter{RunID: j.spec.Changes.RunID, Task: j.spec.Changes.Task}, func(c store.Change) error {
			name = c.Table
			return stop
		})
		if err != nil && !errors.Is(err, stop) {
			return store.StoredTable{}, fmt.Errorf("export: reading the changes of run %d: %w", j.spec.Changes.RunID, err)
		}
		if name == "" {
			return store.StoredTable{}, nil
		}
	}
	if name == "" {
		return store.StoredTable{}, errors.New("export: no table named")
	}
	schema, table, _ := strings.Cut(name, ".")
	if table == "" {
		schema, table = "", name
	}
	t, err := j.r.StoredTable(ctx, schema, table)
	if errors.Is(err, store.ErrNotFound) {
		return t, j.unknownTable(ctx, name, err)
	}
	if err != nil {
		return t, fmt.Errorf("export: %s: %w", name, err)
	}
	if t.Kind != store.KindFeatures {
		return t, fmt.Errorf("export: %s is a %s table, not features", name, t.Kind)
	}
	return t, nil
}

// unknownTable is the error for a table name no stored table has: it lists the
// feature tables there are, and the nearest name.
func (j *Job) unknownTable(ctx context.Context, name string, err error) error {
	all, lerr := j.r.StoredTables(ctx)
	if lerr != nil {
		return fmt.Errorf("export: no table %q: %w", name, err)
	}
	var names []string
	for _, t := range all {
		if t.Kind == store.KindFeatures {
			names = append(names, t.Name)
		}
	}
	msg := fmt.Sprintf("export: no table %q that geoflow wrote", name)
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	if len(names) == 0 {
		msg += "; the store has no feature table yet"
	} else {
		msg += "; the stored tables: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// changesSRID is the CRS the store gives the changes of the job's table in: lon/lat
// when it can read the table in lon/lat, else the table's own (store.Change.SRID).
func (j *Job) changesSRID(ctx context.Context) int {
	if j.table.Name == "" {
		return 4326
	}
	err := j.r.ReadFeatures(ctx, j.table, store.FeatureQuery{Limit: 1}, func(*store.StoredFeature) error { return nil })
	if errors.Is(err, store.ErrNoTransform) {
		return j.table.SRID
	}
	return 4326
}

// crsFor decides the CRS an export writes (write) and reads its features in (read, as
// store.FeatureQuery.SRID takes it) for format f, a table in CRS table (for changes,
// the CRS the store gives them in) and the CRS asked (0: the table's own). A GeoJSON
// sequence is lon/lat; changes come as the store gives them.
func crsFor(f Format, table, asked int, changes bool) (write, read int, err error) {
	switch {
	case asked < 0:
		return 0, 0, fmt.Errorf("srs EPSG:%d is not an EPSG code", asked)
	case f == GeoJSONSeq && asked != 0 && asked != 4326:
		return 0, 0, fmt.Errorf("a GeoJSON sequence is in lon/lat (RFC 7946): it cannot be written in EPSG:%d; write .fgb or .gpkg for another CRS", asked)
	case changes && asked != 0 && asked != cmp.Or(table, 4326):
		return 0, 0, fmt.Errorf("changes are exported as the store keeps them, in EPSG:%d: srs EPSG:%d cannot be asked", cmp.Or(table, 4326), asked)
	case changes && f == GeoJSONSeq && table != 4326 && table != 0:
		return 0, 0, fmt.Errorf("the store keeps these changes in EPSG:%d, which a GeoJSON sequence (lon/lat) cannot hold: write .fgb or .gpkg", table)
	case changes:
		return cmp.Or(table, 4326), 0, nil
	case f == GeoJSONSeq:
		return 4326, 0, nil
	case asked == 0:
		return table, table, nil
	}
	return asked, asked, nil
}

// layerColumns are the columns of an export of t in format f: the table's columns
// named by want, in its order (nil: all, in the table's order), typed as the store
// declares them; then, in a GeoPackage and a FlatGeobuf, which have no feature ids of
// text, gf_feature_id; then, for changes, gf_change and gf_key. A GeoPackage's own
// columns, fid and geom, are renamed fid_1 and geom_1.
func layerColumns(t store.StoredTable, want []string, f Format, changes bool) ([]store.Column, error) {
	chosen, err := chooseColumns(t, want)
	if err != nil {
		return nil, err
	}
	cols := make([]store.Column, 0, len(chosen)+3)
	for _, c := range chosen {
		name := c.Name
		if f == GeoPackage && (strings.EqualFold(name, "fid") || strings.EqualFold(name, "geom")) {
			name += "_1"
		}
		cols = append(cols, store.Column{Name: name, Property: c.Name, Type: store.DeclaredType(c.Type)})
	}
	if f != GeoJSONSeq {
		cols = append(cols, store.Column{Name: "gf_feature_id", Type: store.TypeText})
	}
	if changes {
		cols = append(cols, store.Column{Name: "gf_change", Type: store.TypeText}, store.Column{Name: "gf_key", Type: store.TypeText})
	}
	return cols, nil
}

// chooseColumns are t's columns named by want, in want's order (nil: all of them). A
// name matches a column exactly, else ignoring case; an unknown or repeated one fails.
func chooseColumns(t store.StoredTable, want []string) ([]store.StoredColumn, error) {
	if want == nil {
		return t.Columns, nil
	}
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	var out []store.StoredColumn
	seen := map[string]bool{}
	for _, w := range want {
		i := slices.Index(names, w)
		if i < 0 {
			i = slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, w) })
		}
		if i < 0 {
			msg := fmt.Sprintf("export: %s.%s has no column %q", t.Schema, t.Name, w)
			if s := suggest(w, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, fmt.Errorf("%s; its columns: %s", msg, strings.Join(names, ", "))
		}
		if seen[names[i]] {
			return nil, fmt.Errorf("export: column %q is asked for twice", names[i])
		}
		seen[names[i]] = true
		out = append(out, t.Columns[i])
	}
	return out, nil
}

// columnNames are the names of cols.
func columnNames(cols []store.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// suggest is the name s most likely stands for, if any (didyoumean.Nearest).
func suggest(s string, candidates []string) string { return didyoumean.Nearest(s, candidates) }
