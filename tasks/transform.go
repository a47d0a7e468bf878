package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/cql"
	"github.com/geoflow/geoflow/store"
)

// Transform is the `transform:` of a feature task (wfs, ogcapi_features,
// arcgis_features): what happens to each feature between decoding and the table, as
// ogr2ogr's -select, -where and -nlt PROMOTE_TO_MULTI do. The zero Transform changes
// nothing.
type Transform struct {
	// Columns selects and renames properties: the table gets exactly these columns,
	// named by the keys, in this order, each typed as the source property it takes.
	// Empty keeps every property (laundered names).
	Columns ColumnMap `yaml:"columns"`
	// Where is a CQL2 Text filter (package spatial/cql) on the source properties: only
	// features for which it is true are stored; the others count as returned.
	Where string `yaml:"where"`
	// Geometry promote_to_multi stores Point, LineString and Polygon as their Multi
	// types, so that a table holds one geometry type.
	Geometry string `yaml:"geometry" enum:"promote_to_multi"`
}

// PromoteToMulti is Transform.Geometry's one value.
const PromoteToMulti = "promote_to_multi"

// ColumnMap is transform.columns: column names and the source properties they take,
// in the order the flow writes them.
type ColumnMap []ColumnRename

// ColumnRename is one column of a ColumnMap.
type ColumnRename struct {
	Name     string // the column
	Property string // the source property, as the server spells it
}

// AddPair appends the column key taking property value; the flow decoder calls it for
// each pair of the YAML mapping, in order.
func (m *ColumnMap) AddPair(key, value string) {
	*m = append(*m, ColumnRename{Name: key, Property: value})
}

// Check reports the transform's problems through p, at keys below "transform", with
// the target whose key columns must be among the columns kept.
func (t *Transform) Check(p Problems, target *FeatureTarget) {
	names := map[string]bool{}
	for _, c := range t.Columns {
		at := "transform.columns." + c.Name
		switch {
		case c.Name == "" || Launder(c.Name) != c.Name:
			p.At(at, "%q is not a column name geoflow writes (lowercase letters, digits and _, at most 63 bytes; e.g. %q)", c.Name, Launder(c.Name))
		case isReserved(c.Name):
			p.At(at, "%q is one of geoflow's own columns (geom, gf_...): choose another name", c.Name)
		case names[c.Name]:
			p.At(at, "column %q is named twice", c.Name)
		}
		if c.Property == "" {
			p.At(at, "name the source property column %q takes", c.Name)
		}
		names[c.Name] = true
	}
	if len(t.Columns) > 0 {
		for _, k := range target.Key {
			if !names[k] {
				p.At("target.key", "%q is not one of transform.columns (key columns are named as the table names them)", k)
			}
		}
	}
	if t.Where != "" {
		if _, err := cql.Parse(t.Where); err != nil {
			var se *cql.SyntaxError
			if errors.As(err, &se) {
				p.At("transform.where", "syntax error at column %d of the expression: %s", se.Pos, se.Msg)
			} else {
				p.At("transform.where", "%v", err)
			}
		}
	}
}

func isReserved(name string) bool {
	for _, r := range reservedColumns {
		if r == name {
			return true
		}
	}
	return false
}

// Transformer is a Transform planned against a layer's properties: it decides, feature
// by feature, what is stored. Nil is the transform that changes nothing. It is safe for
// concurrent use.
type Transformer struct {
	filter  *cql.Filter
	promote bool
	// Pushdown is the filter as CQL2 Text for a server that evaluates CQL2 itself;
	// empty without transform.where.
	Pushdown string
}

// Plan checks the transform against the properties the layer declares (a property it
// names that the layer lacks fails, naming the layer's properties and the likeliest
// one) and returns the table's columns and the Transformer, nil where the transform
// changes no feature (columns alone are the table's layout).
func (t *Transform) Plan(layer string, props []Property) ([]store.Column, *Transformer, error) {
	byName := make(map[string]Property, len(props))
	names := make([]string, len(props))
	for i, p := range props {
		byName[p.Name], names[i] = p, p.Name
	}
	unknown := func(key, name string) error {
		msg := fmt.Sprintf("%s: %q is not a property of %s (its properties: %s)", key, name, layer, strings.Join(names, ", "))
		if s := suggest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return errors.New(msg)
	}
	cols := Columns(props)
	if len(t.Columns) > 0 {
		cols = make([]store.Column, 0, len(t.Columns))
		for _, c := range t.Columns {
			p, ok := byName[c.Property]
			if !ok {
				return nil, nil, unknown("transform.columns."+c.Name, c.Property)
			}
			cols = append(cols, store.Column{Name: c.Name, Property: p.Name, Type: p.Type})
		}
	}
	if t.Where == "" && t.Geometry != PromoteToMulti {
		return cols, nil, nil
	}
	x := &Transformer{promote: t.Geometry == PromoteToMulti}
	if t.Where != "" {
		e, err := cql.Parse(t.Where)
		if err != nil {
			return nil, nil, fmt.Errorf("transform.where: %w", err)
		}
		for _, r := range e.Properties() {
			if _, ok := byName[r.Name]; !ok {
				return nil, nil, unknown(fmt.Sprintf("transform.where (column %d)", r.Pos), r.Name)
			}
		}
		types := make(map[string]cql.Type, len(props))
		for _, p := range props {
			types[p.Name] = cqlType(p.Type)
		}
		if x.filter, err = e.Bind(types); err != nil {
			return nil, nil, fmt.Errorf("transform.where: %w", err)
		}
		x.Pushdown = e.String()
	}
	return cols, x, nil
}

// cqlType is how values of a column type compare.
func cqlType(t store.ColumnType) cql.Type {
	switch t {
	case store.TypeBigint, store.TypeDouble, store.TypeNumeric:
		return cql.Number
	case store.TypeBoolean:
		return cql.Boolean
	case store.TypeDate:
		return cql.Date
	case store.TypeTimestamptz:
		return cql.Timestamp
	}
	return cql.Text
}

// Keep says whether f passes transform.where; true without one.
func (x *Transformer) Keep(f *spatial.Feature) bool {
	return x == nil || x.filter == nil || x.filter.Match(f.Properties)
}

// Reshape changes f as the transform says (its geometry made multi), keeping in f.Hash
// the payload hash of f as it came, so that its row keeps the source's identity.
func (x *Transformer) Reshape(f *spatial.Feature) {
	if x == nil || !x.promote {
		return
	}
	m, ok := promote(f.Geometry)
	if !ok {
		return
	}
	if f.Hash == nil {
		h := spatial.PayloadHash(f)
		f.Hash = &h
	}
	f.Geometry = m
}

// promote is g as its Multi type, ok false where g is multi already (or nil, or a
// collection).
func promote(g orb.Geometry) (orb.Geometry, bool) {
	switch v := g.(type) {
	case orb.Point:
		return orb.MultiPoint{v}, true
	case orb.LineString:
		return orb.MultiLineString{v}, true
	case orb.Polygon:
		return orb.MultiPolygon{v}, true
	}
	return g, false
}

// Stream is s through the transform, for the unit with box unit of a harvest over area:
// features the filter leaves out are skipped and counted (Evidence.Filtered) where this
// unit is the one to count them (CountsFiltered); the others reshaped. A nil Transformer
// returns s.
func (x *Transformer) Stream(s Stream, unit, area orb.Bound) Stream {
	if x == nil {
		return s
	}
	return &transformStream{in: s, x: x, unit: unit, area: area}
}

var _ store.Refuser = (*transformStream)(nil)

// transformStream is a Stream through a Transformer.
type transformStream struct {
	in         Stream
	x          *Transformer
	unit, area orb.Bound
	filtered   int64
}

// Next implements store.FeatureSource.
func (s *transformStream) Next() (*spatial.Feature, error) {
	for {
		f, err := s.in.Next()
		if err != nil {
			return f, err
		}
		if !s.x.Keep(f) {
			if CountsFiltered(f.Geometry, s.unit, s.area) {
				s.filtered++
			}
			continue
		}
		s.x.Reshape(f)
		return f, nil
	}
}

// Observe implements Stream: the evidence of the stream it wraps (every feature the
// server returned, kept or not), and the features it left out.
func (s *transformStream) Observe(e *Evidence) *RejectedError {
	r := s.in.Observe(e)
	e.Filtered = s.filtered
	return r
}

// Refuse implements store.Refuser, telling the stream it wraps.
func (s *transformStream) Refuse(f *spatial.Feature, err error) {
	if r, ok := s.in.(store.Refuser); ok {
		r.Refuse(f, err)
	}
}

// CountsFiltered decides which unit counts a feature the filter left out, so that one
// returned by several tiles (it crosses their edges) is counted once: the unit whose box
// holds the first vertex of g inside the harvest's area, boxes taken as half-open
// (minimum edges in, maximum edges out, but for the area's own maximum edges). Tiles cut
// from one area share their edges exactly, so exactly one holds that vertex, and it
// intersects g, so its response held g. A feature with no vertex in the area (a line
// crossing it) or without a geometry is counted by every unit that returned it.
func CountsFiltered(g orb.Geometry, unit, area orb.Bound) bool {
	p, ok := vertexIn(g, area)
	if !ok {
		return true
	}
	in := func(i int) bool {
		return p[i] >= unit.Min[i] && (p[i] < unit.Max[i] || unit.Max[i] >= area.Max[i])
	}
	return in(0) && in(1)
}

// vertexIn is the first vertex of g inside b (edges included).
func vertexIn(g orb.Geometry, b orb.Bound) (orb.Point, bool) {
	var found orb.Point
	ok := false
	visit := func(ps []orb.Point) {
		for _, p := range ps {
			if !ok && b.Contains(p) {
				found, ok = p, true
			}
		}
	}
	walkPoints(g, visit)
	return found, ok
}

func walkPoints(g orb.Geometry, fn func([]orb.Point)) {
	switch v := g.(type) {
	case orb.Point:
		fn([]orb.Point{v})
	case orb.MultiPoint:
		fn(v)
	case orb.LineString:
		fn(v)
	case orb.MultiLineString:
		for _, l := range v {
			fn(l)
		}
	case orb.Ring:
		fn(v)
	case orb.Polygon:
		for _, r := range v {
			fn(r)
		}
	case orb.MultiPolygon:
		for _, p := range v {
			walkPoints(p, fn)
		}
	case orb.Collection:
		for _, c := range v {
			walkPoints(c, fn)
		}
	}
}

// Lookup is l through the transform: features the server still serves by id but the
// filter leaves out are not returned (for a mirror, gone like features the server no
// longer has), the others reshaped. A nil Transformer or l returns l.
func (x *Transformer) Lookup(l IDLookup) IDLookup {
	if x == nil || l == nil {
		return l
	}
	return transformLookup{in: l, x: x}
}

// transformLookup is an IDLookup through a Transformer.
type transformLookup struct {
	in IDLookup
	x  *Transformer
}

// BatchSize implements IDLookup.
func (l transformLookup) BatchSize() int { return l.in.BatchSize() }

// LookupIDs implements IDLookup.
func (l transformLookup) LookupIDs(ctx context.Context, env *Env, ids []string) ([]*spatial.Feature, error) {
	fs, err := l.in.LookupIDs(ctx, env, ids)
	if err != nil {
		return nil, err
	}
	kept := fs[:0]
	for _, f := range fs {
		if l.x.Keep(f) {
			l.x.Reshape(f)
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// suggest is the name s most likely stands for, if any (didyoumean.Nearest).
func suggest(s string, candidates []string) string { return didyoumean.Nearest(s, candidates) }
