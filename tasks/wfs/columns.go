package wfs

import (
	"strings"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
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

// columns lays out one column per property, laundered and made unique.
func columns(props []Property) []store.Column {
	ps := make([]tasks.Property, len(props))
	for i, p := range props {
		ps[i] = tasks.Property{Name: p.Name, Type: columnType(p.XSDType)}
	}
	return tasks.Columns(ps)
}
