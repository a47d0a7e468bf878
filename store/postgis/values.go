package postgis

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/geoflow/geoflow/store"
)

// ReadFeatures reads the columns propertySQL would cast on the server as they are
// stored, in their binary form, and makes of them here what the cast would have: a
// million rows' to_char and numeric casts took PostgreSQL four seconds of CPU, more
// than reading the rows. clientCast says which columns are read so; rawValue decodes
// them. When the server sends one of them as text (the simple protocol), the rows are
// read again with the casts (ReadFeatures).

// clientCast tells whether a column of type typ is read as stored and converted by
// rawValue rather than by propertySQL's cast.
func clientCast(typ string) bool {
	switch baseType(typ) {
	case "date", "timestamp with time zone", "timestamp without time zone", "numeric", "integer", "smallint", "real":
		return true
	}
	return false
}

// readColumnSQL is the SQL of column col as ReadFeatures reads it: as stored when
// clientCast, else as propertySQL casts it.
func readColumnSQL(alias string, col store.StoredColumn) string {
	if clientCast(col.Type) {
		return alias + "." + pgx.Identifier{col.Name}.Sanitize()
	}
	return propertySQL(alias, col)
}

// rawOIDs are the types rawValue decodes from their binary form.
var rawOIDs = map[uint32]bool{pgtype.DateOID: true, pgtype.TimestamptzOID: true, pgtype.TimestampOID: true,
	pgtype.NumericOID: true, pgtype.Int4OID: true, pgtype.Int2OID: true, pgtype.Float4OID: true}

// errNotRaw is rawValue's answer for a type or form it does not decode.
var errNotRaw = errors.New("postgis: not a raw value")

// rawValue is b, the binary form of a value of type oid, as propertySQL's cast makes
// it: a date as YYYY-MM-DD, a timestamp as RFC 3339 text (UTC, Z, with timezone), the
// fraction of a second without its trailing zeros, an infinite one NULL (nil, as
// to_char makes it); numeric and real as float64 (numeric out of its range fails, as
// the cast does); integer and smallint as int64.
func rawValue(oid uint32, b []byte) (any, error) {
	switch {
	case oid == pgtype.Int4OID && len(b) == 4:
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case oid == pgtype.Int2OID && len(b) == 2:
		return int64(int16(binary.BigEndian.Uint16(b))), nil
	case oid == pgtype.Float4OID && len(b) == 4:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case oid == pgtype.NumericOID:
		return numericFloat(b)
	case oid == pgtype.DateOID && len(b) == 4:
		days := int32(binary.BigEndian.Uint32(b))
		if days == math.MaxInt32 || days == math.MinInt32 {
			return nil, nil // infinity
		}
		return string(appendDate(nil, pgEpoch.AddDate(0, 0, int(days)))), nil
	case (oid == pgtype.TimestamptzOID || oid == pgtype.TimestampOID) && len(b) == 8:
		us := int64(binary.BigEndian.Uint64(b))
		if us == math.MaxInt64 || us == math.MinInt64 {
			return nil, nil // infinity
		}
		return string(appendTimestamp(nil, pgEpoch.Add(time.Duration(us%86400e6)*time.Microsecond).AddDate(0, 0, int(us/86400e6)), oid == pgtype.TimestamptzOID)), nil
	}
	return nil, errNotRaw
}

// pgEpoch is the origin of PostgreSQL's binary dates and timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// appendDate appends t's date as to_char(d, 'YYYY-MM-DD') writes it: at least four
// digits of the year, a year before 1 as its number BC (without the era).
func appendDate(b []byte, t time.Time) []byte {
	y := t.Year()
	if y < 1 {
		y = 1 - y
	}
	b = appendPadded(b, y, 4)
	b = append(b, '-')
	b = appendPadded(b, int(t.Month()), 2)
	b = append(b, '-')
	return appendPadded(b, t.Day(), 2)
}

// appendTimestamp appends t as rfc3339 (zone true) or the text of a timestamp without
// time zone writes it: the date, T, the time, the microseconds without their trailing
// zeros, and Z for a zone.
func appendTimestamp(b []byte, t time.Time, zone bool) []byte {
	b = appendDate(b, t)
	b = append(b, 'T')
	b = appendPadded(b, t.Hour(), 2)
	b = append(b, ':')
	b = appendPadded(b, t.Minute(), 2)
	b = append(b, ':')
	b = appendPadded(b, t.Second(), 2)
	if us := t.Nanosecond() / 1000; us > 0 {
		b = append(b, '.')
		b = appendPadded(b, us, 6)
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
	}
	if zone {
		b = append(b, 'Z')
	}
	return b
}

// appendPadded appends n (not negative) in decimal, zero-padded to width digits.
func appendPadded(b []byte, n, width int) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// numericFloat is a numeric's binary form as numeric::double precision makes it: the
// nearest float64 (NaN and the infinities as they are); a value beyond float64's range
// fails, as the cast does.
func numericFloat(b []byte) (any, error) {
	if len(b) < 8 {
		return nil, errNotRaw
	}
	n := int(binary.BigEndian.Uint16(b[0:]))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	if len(b) != 8+2*n {
		return nil, errNotRaw
	}
	switch sign {
	case 0xC000:
		return math.NaN(), nil
	case 0xD000:
		return math.Inf(1), nil
	case 0xF000:
		return math.Inf(-1), nil
	}
	if n == 0 {
		return 0.0, nil
	}
	var buf [64]byte
	s := buf[:0]
	if sign == 0x4000 {
		s = append(s, '-')
	}
	// The digits are base 10,000: their decimal digits, four each, then the exponent.
	for i := range n {
		s = appendPadded(s, int(binary.BigEndian.Uint16(b[8+2*i:])), 4)
	}
	s = append(s, 'e')
	s = strconv.AppendInt(s, int64(4*(weight-n+1)), 10)
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil || (f == 0 && !allZero(b[8:])) { // Go rounds an underflow to 0; the cast fails
		return nil, fmt.Errorf("numeric value %s is out of range for type double precision", s)
	}
	return f, nil
}

// allZero tells whether every byte of b is 0.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
