package postgis

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
)

// TestRawValueMatchesCast: every value ReadFeatures reads as stored and converts itself
// (clientCast) comes out as propertySQL's cast makes it on the server: dates and
// timestamps of every era and precision, the infinities (NULL), numerics of many
// digits, NaN and the infinities, the integers' and real's extremes.
func TestRawValueMatchesCast(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tests := []struct {
		name, typ string
		values    []string
	}{
		{"date", "date", []string{"2024-05-01", "0001-01-01", "0044-03-15 BC", "4713-01-01 BC", "9999-12-31", "12345-06-07", "1999-12-31", "2000-01-01", "infinity", "-infinity"}},
		{"timestamptz", "timestamp with time zone", []string{"2024-05-01 10:00:00+02", "2024-05-01 10:00:00.5+00", "2024-05-01 23:59:59.999999+00",
			"1969-12-31 23:59:59.000001+00", "0044-03-15 12:00:00+00 BC", "2000-01-01 00:00:00+00", "1999-12-31 23:59:59.1+00", "20000-01-01 00:00:00+00", "infinity", "-infinity"}},
		{"timestamp", "timestamp without time zone", []string{"2024-05-01 10:00:00", "2024-05-01 10:00:00.120", "1899-01-01 00:00:00.000001", "infinity"}},
		{"numeric", "numeric", []string{"0", "1", "-1", "0.1", "123456789.123456789", "-0.000000000000000000001", "1e300", "1e-300",
			"3.141592653589793238462643383279", "99999999999999999999999999999999999", "10000", "0.0001", "NaN", "Infinity", "-Infinity", "12.3400"}},
		{"numeric(10,2)", "numeric(10,2)", []string{"12345678.91", "-0.01", "0.00"}},
		{"integer", "integer", []string{"0", "2147483647", "-2147483648"}},
		{"smallint", "smallint", []string{"0", "32767", "-32768"}},
		{"real", "real", []string{"0", "3.4028235e38", "-1.17549435e-38", "0.1", "NaN", "Infinity"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			col := store.StoredColumn{Name: "v", Type: tc.typ}
			if !clientCast(tc.typ) {
				t.Fatalf("%s is not read as stored", tc.typ)
			}
			for _, v := range tc.values {
				sql := fmt.Sprintf("SELECT t.v, %s FROM (SELECT $1::text::%s AS v) t", propertySQL("t", col), tc.typ)
				rows, err := conn.Query(ctx, sql, v)
				if err != nil {
					t.Fatal(err)
				}
				if !rows.Next() {
					t.Fatalf("%s: no row: %v", v, rows.Err())
				}
				raw := rows.RawValues()
				fd := rows.FieldDescriptions()[0]
				var want any
				if err := rows.Scan(nil, &want); err != nil {
					t.Fatal(err)
				}
				rows.Close()
				if fd.Format != pgx.BinaryFormatCode {
					t.Fatalf("%s came as text", tc.typ)
				}
				var got any
				if raw[0] != nil {
					if got, err = rawValue(fd.DataTypeOID, raw[0]); err != nil {
						t.Fatalf("%s: %v", v, err)
					}
				}
				if !same(got, want) {
					t.Errorf("%s %s: %#v, the cast makes %#v", tc.typ, v, got, want)
				}
			}
		})
	}
}

func same(a, b any) bool {
	if fa, ok := a.(float64); ok {
		if fb, ok := b.(float64); ok && math.IsNaN(fa) && math.IsNaN(fb) {
			return true
		}
	}
	return a == b
}

// TestRawNumericOutOfRange: a numeric beyond double precision fails to read, as the cast
// fails on the server.
func TestRawNumericOutOfRange(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, v := range []string{"1e400", "-1e400", "1e-400"} {
		rows, err := conn.Query(ctx, "SELECT $1::text::numeric", v)
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		raw := rows.RawValues()
		oid := rows.FieldDescriptions()[0].DataTypeOID
		rows.Close()
		if got, err := rawValue(oid, raw[0]); err == nil {
			t.Errorf("numeric %s: %v, want an error as the cast's", v, got)
		}
		if _, err := conn.Exec(ctx, "SELECT $1::text::numeric::double precision", v); err == nil {
			t.Errorf("numeric %s: the cast took it", v)
		}
	}
}
