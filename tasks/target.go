package tasks

import (
	"fmt"
	"strings"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// FeatureTarget is the `target:` of a feature task (wfs, ogcapi_features,
// arcgis_features): where its features land and how rows are keyed. The zero Mode means
// append.
type FeatureTarget struct {
	// Table is [schema.]table, created when missing.
	Table string `yaml:"table"`
	// Mode is append (payload-hash key, default), upsert (with Key) or mirror (keyed on
	// the feature id, or Key; features gone from a complete harvest are deleted).
	Mode store.Mode `yaml:"mode" enum:"append,upsert,mirror"`
	Key  []string   `yaml:"key"`
	// History keeps every version of each feature (gf_valid_from, gf_valid_to).
	History bool `yaml:"history"`
	// MaxDeleteFraction is mirror mode's safety rail: a run that would delete more than
	// this share of the table deletes nothing and fails, unless --allow-mass-delete.
	// Nil means DefaultMaxDeleteFraction.
	MaxDeleteFraction *float64 `yaml:"max_delete_fraction"`
	// DeleteAfter is how many consecutive complete runs a mirror's row must be absent
	// from before it is deleted, where the server cannot be asked whether the feature
	// still exists (by id). Nil means DefaultDeleteAfter.
	DeleteAfter *int `yaml:"delete_after"`
	// SRS is the CRS the features are stored in (EPSG:25832, or its URN or
	// http://www.opengis.net/def/crs/EPSG/0/ form), reprojected from the CRS the source
	// delivers them in. Empty means as delivered. Payload hashes stay those of the
	// delivered geometry.
	SRS string `yaml:"srs"`
}

// Reproject makes table, whose SRID is the CRS its features arrive in, store them in the
// target's SRS: SourceSRID takes the arriving SRID and SRID the target's. Without an SRS,
// or with the arriving one, table is left as it is. Check has refused an SRS that is not
// an EPSG code.
func (t *FeatureTarget) Reproject(table *store.FeatureTable) {
	if t.SRS == "" {
		return
	}
	srid, err := spatial.SRID(t.SRS)
	if err != nil || srid == table.SRID {
		return
	}
	table.SourceSRID, table.SRID = table.SRID, srid
}

// DefaultDeleteAfter is how many consecutive complete runs a mirror's row must be
// absent from, where the server cannot be asked by id, before it is deleted.
const DefaultDeleteAfter = 2

// AbsentRuns is the target's DeleteAfter or its default.
func (t *FeatureTarget) AbsentRuns() int {
	if t.DeleteAfter == nil {
		return DefaultDeleteAfter
	}
	return *t.DeleteAfter
}

// DefaultMaxDeleteFraction is the share of a mirror table one run may delete unasked.
const DefaultMaxDeleteFraction = 0.1

// DeleteFraction is the target's safety rail (MaxDeleteFraction or its default).
func (t *FeatureTarget) DeleteFraction() float64 {
	if t.MaxDeleteFraction == nil {
		return DefaultMaxDeleteFraction
	}
	return *t.MaxDeleteFraction
}

// Check reports the target's problems through p, at keys below "target".
func (t *FeatureTarget) Check(p Problems) {
	if t.Table == "" {
		p.At("", "target.table is required")
	} else if _, _, err := store.SplitTable(t.Table); err != nil {
		p.At("target.table", "%v", err)
	}
	if t.Mode == store.ModeUpsert && len(t.Key) == 0 {
		p.At("target.key", "upsert mode needs target.key (the properties that identify a feature)")
	}
	if t.Mode != store.ModeUpsert && t.Mode != store.ModeMirror && len(t.Key) > 0 {
		p.At("target.key", "only used with mode: upsert or mirror")
	}
	for _, k := range t.Key {
		if Launder(k) != k {
			p.At("target.key", "%q: name key columns as they are stored (lowercase, e.g. %q)", k, Launder(k))
		}
	}
	if f := t.MaxDeleteFraction; f != nil {
		switch {
		case t.Mode != store.ModeMirror:
			p.At("target.max_delete_fraction", "only used with mode: mirror (no other mode deletes)")
		case *f < 0 || *f > 1 || *f != *f:
			p.At("target.max_delete_fraction", "%g is not a share of the table: use a number from 0 to 1 (0.1 = 10%%)", *f)
		}
	}
	if t.SRS != "" {
		if _, err := spatial.SRID(t.SRS); err != nil {
			p.At("target.srs", "%q is not a CRS to store features in: name an EPSG code (EPSG:25832, urn:ogc:def:crs:EPSG::25832 or http://www.opengis.net/def/crs/EPSG/0/25832)", t.SRS)
		}
	}
	if n := t.DeleteAfter; n != nil {
		switch {
		case t.Mode != store.ModeMirror:
			p.At("target.delete_after", "only used with mode: mirror (no other mode deletes)")
		case *n < 1:
			p.At("target.delete_after", "%d: a row is deleted after it was absent from this many complete runs; use 1 or more (default %d)", *n, DefaultDeleteAfter)
		}
	}
}

// Property is a feature property a server declares, with the column type it maps to.
type Property struct {
	Name string
	Type store.ColumnType
}

// Launder turns a property name into a column name the way ogr2ogr's PostgreSQL driver
// does with LAUNDER=YES: lower case, and characters other than letters, digits and _
// replaced by _, cut to PostgreSQL's 63 bytes.
func Launder(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r > 127:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// reservedColumns are the columns every feature table has: a property with one of their
// names gets a suffix.
var reservedColumns = [...]string{"geom", "gf_feature_id", "gf_payload_hash", "gf_run_id", "gf_fetched_at",
	"gf_key", "gf_valid_from", "gf_valid_to", "gf_closed_run"}

// Columns lays out one column per property, laundered and made unique.
func Columns(props []Property) []store.Column {
	used := map[string]bool{}
	for _, k := range reservedColumns {
		used[k] = true
	}
	out := make([]store.Column, 0, len(props))
	for _, p := range props {
		name := Launder(p.Name)
		if name == "" {
			name = "field"
		}
		base := name
		for i := 1; used[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		used[name] = true
		out = append(out, store.Column{Name: name, Property: p.Name, Type: p.Type})
	}
	return out
}

// CheckKey makes sure every key column of table is one of its columns.
func CheckKey(table *store.FeatureTable, layer string) error {
	for _, k := range table.Key {
		found := false
		for _, c := range table.Columns {
			found = found || c.Name == k
		}
		if !found {
			names := make([]string, len(table.Columns))
			for i, c := range table.Columns {
				names[i] = c.Name
			}
			return fmt.Errorf("target.key %q is not a property of %s (its columns: %s)", k, layer, strings.Join(names, ", "))
		}
	}
	return nil
}
