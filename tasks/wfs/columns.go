package wfs

import (
	"fmt"
	"strings"

	"github.com/geoflow/geoflow/store"
)

// columnType maps an XSD type to a column type.
func columnType(xsd string) store.ColumnType {
	switch strings.ToLower(xsd) {
	case "int", "integer", "long", "short", "byte", "nonnegativeinteger", "positiveinteger", "negativeinteger",
		"nonpositiveinteger", "unsignedint", "unsignedshort", "unsignedbyte", "unsignedlong":
		return store.TypeBigint
	case "double", "float":
		return store.TypeDouble
	case "decimal":
		return store.TypeNumeric
	case "boolean":
		return store.TypeBoolean
	case "date":
		return store.TypeDate
	case "datetime":
		return store.TypeTimestamptz
	}
	return store.TypeText
}

// launder turns a property name into a column name the way ogr2ogr's PostgreSQL driver
// does with LAUNDER=YES: lower case, and characters other than letters, digits and _
// replaced by _, cut to PostgreSQL's 63 bytes.
func launder(name string) string {
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

// reserved column names: a property with one of them gets a suffix.
var reserved = map[string]bool{"geom": true, "gf_feature_id": true, "gf_payload_hash": true, "gf_run_id": true, "gf_fetched_at": true}

// columns lays out one column per property, laundered and made unique.
func columns(props []Property) []store.Column {
	used := map[string]bool{}
	for k := range reserved {
		used[k] = true
	}
	out := make([]store.Column, 0, len(props))
	for _, p := range props {
		name := launder(p.Name)
		if name == "" {
			name = "field"
		}
		base := name
		for i := 1; used[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		used[name] = true
		out = append(out, store.Column{Name: name, Property: p.Name, Type: columnType(p.XSDType)})
	}
	return out
}

func columnNames(cols []store.Column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
