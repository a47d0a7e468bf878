package store

import "strings"

// declaredTypes maps a declared column type, lower-cased and without its parameters
// ("numeric(10,2)" is "numeric", "TEXT(20)" is "text"), to the ColumnType it holds.
// The names are what PostgreSQL's format_type writes and what SQLite and GeoPackage
// files declare (GeoPackage's own list, and the aliases other tools write).
var declaredTypes = map[string]ColumnType{
	// text
	"text": TypeText, "character varying": TypeText, "varchar": TypeText, "character": TypeText,
	"char": TypeText, "bpchar": TypeText, "name": TypeText, "citext": TypeText, "uuid": TypeText,
	"clob": TypeText, "nvarchar": TypeText, "nchar": TypeText,
	// integers
	"bigint": TypeBigint, "integer": TypeBigint, "smallint": TypeBigint, "int": TypeBigint,
	"int2": TypeBigint, "int4": TypeBigint, "int8": TypeBigint, "mediumint": TypeBigint,
	"tinyint": TypeBigint, "unsigned big int": TypeBigint,
	// floating point
	"double precision": TypeDouble, "real": TypeDouble, "double": TypeDouble, "float": TypeDouble,
	"float4": TypeDouble, "float8": TypeDouble,
	// exact numbers
	"numeric": TypeNumeric, "decimal": TypeNumeric,
	// the rest
	"boolean": TypeBoolean, "bool": TypeBoolean, "date": TypeDate,
	"timestamp with time zone": TypeTimestamptz, "timestamp without time zone": TypeTimestamptz,
	"timestamptz": TypeTimestamptz, "timestamp": TypeTimestamptz, "datetime": TypeTimestamptz,
	"jsonb": TypeJSONB, "json": TypeJSONB,
}

// DeclaredType is the ColumnType nearest to a column type as a store declares it:
// PostgreSQL's format_type names ("character varying", "numeric(10,2)", "timestamp with
// time zone") and SQLite's or GeoPackage's ("TEXT(20)", "MEDIUMINT", "DOUBLE",
// "DATETIME"), in any case. Every integer type is TypeBigint, every floating-point one
// TypeDouble; a time with or without a zone is TypeTimestamptz (a time without one reads
// as UTC). Anything else, unknown or without a ColumnType of its own (arrays, "BLOB",
// "bytea", "time", geometry types, ""), is TypeText: its values are written as text.
func DeclaredType(declared string) ColumnType {
	s := strings.ToLower(strings.TrimSpace(declared))
	if strings.HasSuffix(s, "]") { // an array: "integer[]", "text[3]"
		return TypeText
	}
	// Parameters may sit before the end, as in "timestamp(3) with time zone".
	if i := strings.IndexByte(s, '('); i >= 0 {
		if j := strings.IndexByte(s[i:], ')'); j >= 0 {
			s = s[:i] + s[i+j+1:]
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if t, ok := declaredTypes[s]; ok {
		return t
	}
	return TypeText
}
