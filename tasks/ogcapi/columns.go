package ogcapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

// sampleSize is how many features are read to lay out the table's columns when the
// server publishes no queryables.
const sampleSize = 200

// properties lays out the table's columns: from the collection's queryables where the
// server publishes them, else from a sample of the area's features (numbers as numeric,
// which holds integers and decimals exactly; strings as text). The sample's answer also
// tells whether the server counts (numberMatched) and how its next links page.
func (t *Task) properties(ctx context.Context, env *tasks.Env, p *prepared, coll *collection, area orb.Bound) ([]tasks.Property, spatial.Meta, error) {
	var props []tasks.Property
	seen := map[string]int{}      // property -> index in props
	declared := map[string]bool{} // typed by the queryables: the sample does not retype them
	add := func(name string, typ store.ColumnType) {
		if i, ok := seen[name]; ok {
			if props[i].Type != typ && typ != "" && !declared[name] {
				props[i].Type = widen(props[i].Type, typ)
			}
			return
		}
		seen[name] = len(props)
		props = append(props, tasks.Property{Name: name, Type: typ})
	}
	if q := t.keepQuery(find(coll.Links, relQueryables, p.items)); q != "" {
		var qs queryables
		if err := t.getJSON(ctx, env, "queryables", withF(q), "queryables", &qs); err != nil {
			env.Logger.Warn("could not read the queryables; the columns are laid out from a sample", "err", err)
		} else {
			names := make([]string, 0, len(qs.Properties))
			for n := range qs.Properties {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				if typ, ok := schemaType(qs.Properties[n].Type, qs.Properties[n].Format); ok && t.wanted(n) {
					add(n, typ)
					declared[n] = true
				}
			}
		}
	}
	meta := spatial.UnknownMeta()
	q := harvest.Query{Box: area, Count: sampleSize}
	fromQueryables := slices.Clone(props)
	err := env.HTTP.Do(ctx, t.request(env, "sample", t.itemsURL(p, q), acceptFeatures), func(resp *http.Response) error {
		// An earlier attempt's sample is forgotten; the queryables' columns are kept.
		props, seen = slices.Clone(fromQueryables), map[string]int{}
		for i, pr := range props {
			seen[pr.Name] = i
		}
		if err := tasks.RefuseHTML(resp); err != nil {
			return err
		}
		body, done := env.Meter(resp.Body)
		defer done()
		r := geojson.NewReader(body, geojson.Options{Limits: t.cfg.Limits.Spatial()})
		err := spatial.Walk(r, func(f *spatial.Feature) error {
			keys := make([]string, 0, len(f.Properties))
			for k := range f.Properties {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if t.wanted(k) {
					add(k, valueType(f.Properties[k]))
				}
			}
			return nil
		})
		if err != nil {
			return classify(err)
		}
		meta = r.Meta()
		return nil
	})
	if err != nil {
		return nil, meta, fmt.Errorf("reading a sample of collection %q: %w", t.cfg.Collection, err)
	}
	for i := range props {
		if props[i].Type == "" {
			props[i].Type = store.TypeText // null in every sampled feature
		}
	}
	return props, meta, nil
}

// wanted says whether property name is harvested (properties: restricts them).
func (t *Task) wanted(name string) bool {
	return len(t.cfg.Properties) == 0 || slices.Contains(t.cfg.Properties, name)
}

// schemaType maps a JSON Schema type (and format) to a column type; ok is false for
// geometry and what cannot be a column.
func schemaType(typ any, format string) (store.ColumnType, bool) {
	var s string
	switch v := typ.(type) {
	case string:
		s = v
	case []any:
		for _, x := range v {
			if x, ok := x.(string); ok && x != "null" {
				s = x
			}
		}
	}
	if strings.HasPrefix(format, "geometry") {
		return "", false
	}
	switch s {
	case "integer":
		return store.TypeBigint, true
	case "number":
		return store.TypeNumeric, true
	case "boolean":
		return store.TypeBoolean, true
	case "string":
		switch format {
		case "date-time":
			return store.TypeTimestamptz, true
		case "date":
			return store.TypeDate, true
		}
		return store.TypeText, true
	}
	return store.TypeText, true
}

// valueType is the column type of one sampled value, "" for null.
func valueType(v any) store.ColumnType {
	switch v.(type) {
	case nil:
		return ""
	case bool:
		return store.TypeBoolean
	case float64:
		return store.TypeNumeric
	}
	return store.TypeText
}

// widen is a column type that holds values of both a and b.
func widen(a, b store.ColumnType) store.ColumnType {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return store.TypeText
}

// unknownProps watches for properties that have no column: laid out from a sample, the
// table may miss a property the sample's features did not carry. Such a property is not
// stored; the first of each name is logged, so that the user can name it in properties:
// or recreate the table.
type unknownProps struct {
	*geojson.Reader
	p   *prepared
	t   *Task
	env *tasks.Env
}

func (u *unknownProps) Next() (*spatial.Feature, error) {
	f, err := u.Reader.Next()
	if err == nil {
		for k := range f.Properties {
			if !u.p.columns[k] && u.t.wanted(k) {
				if _, seen := u.t.unknown.LoadOrStore(k, true); !seen {
					u.env.Logger.Warn("a property the table has no column for is not stored (it was absent from the sample the columns were laid out from)",
						"property", k, "feature", f.ID, "table", u.p.table.Schema+"."+u.p.table.Name)
				}
			}
		}
	}
	return f, err
}
