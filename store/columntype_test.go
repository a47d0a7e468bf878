package store

import "testing"

func TestDeclaredType(t *testing.T) {
	for _, tc := range []struct {
		name, declared string
		want           ColumnType
	}{
		// PostgreSQL, as format_type writes them
		{"pg text", "text", TypeText},
		{"pg varchar", "character varying", TypeText},
		{"pg varchar with length", "character varying(20)", TypeText},
		{"pg char", "character(1)", TypeText},
		{"pg uuid", "uuid", TypeText},
		{"pg bigint", "bigint", TypeBigint},
		{"pg integer", "integer", TypeBigint},
		{"pg smallint", "smallint", TypeBigint},
		{"pg double", "double precision", TypeDouble},
		{"pg real", "real", TypeDouble},
		{"pg numeric", "numeric", TypeNumeric},
		{"pg numeric with precision", "numeric(10,2)", TypeNumeric},
		{"pg boolean", "boolean", TypeBoolean},
		{"pg date", "date", TypeDate},
		{"pg timestamptz", "timestamp with time zone", TypeTimestamptz},
		{"pg timestamp", "timestamp without time zone", TypeTimestamptz},
		{"pg timestamp with precision", "timestamp(3) with time zone", TypeTimestamptz},
		{"pg jsonb", "jsonb", TypeJSONB},
		{"pg json", "json", TypeJSONB},
		{"pg array is text, not its element type", "integer[]", TypeText},
		{"pg sized array", "double precision[3]", TypeText},
		{"pg bytea", "bytea", TypeText},
		{"pg time of day", "time without time zone", TypeText},
		{"pg interval", "interval", TypeText},
		{"pg geometry", "geometry(Point,4326)", TypeText},
		// SQLite and GeoPackage
		{"gpkg TEXT", "TEXT", TypeText},
		{"gpkg TEXT with length", "TEXT(20)", TypeText},
		{"sqlite VARCHAR", "VARCHAR(255)", TypeText},
		{"gpkg INTEGER", "INTEGER", TypeBigint},
		{"gpkg MEDIUMINT", "MEDIUMINT", TypeBigint},
		{"gpkg TINYINT", "TINYINT", TypeBigint},
		{"gpkg SMALLINT", "SMALLINT", TypeBigint},
		{"sqlite INT", "INT", TypeBigint},
		{"gpkg REAL", "REAL", TypeDouble},
		{"gpkg DOUBLE", "DOUBLE", TypeDouble},
		{"gpkg FLOAT", "FLOAT", TypeDouble},
		{"sqlite DECIMAL", "DECIMAL(10,5)", TypeNumeric},
		{"sqlite NUMERIC", "NUMERIC", TypeNumeric},
		{"gpkg BOOLEAN", "BOOLEAN", TypeBoolean},
		{"gpkg DATE", "DATE", TypeDate},
		{"gpkg DATETIME", "DATETIME", TypeTimestamptz},
		{"gpkg BLOB", "BLOB", TypeText},
		{"gpkg GEOMETRY", "GEOMETRY", TypeText},
		{"gpkg POINT is not an integer", "POINT", TypeText},
		// odd spellings
		{"mixed case and spaces", "  Double   Precision ", TypeDouble},
		{"empty", "", TypeText},
		{"unknown", "tsvector", TypeText},
		{"unbalanced parenthesis", "numeric(10", TypeText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeclaredType(tc.declared); got != tc.want {
				t.Fatalf("DeclaredType(%q) = %q, want %q", tc.declared, got, tc.want)
			}
		})
	}
}
