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

// properties are the feature type's properties with the column types they map to.
func properties(props []Property) []tasks.Property {
	ps := make([]tasks.Property, len(props))
	for i, p := range props {
		ps[i] = tasks.Property{Name: p.Name, Type: columnType(p.XSDType)}
	}
	return ps
}
