package flatgeobuf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/geoflow/geoflow/store"
)

// columnTypeFor is the FlatGeobuf type a column of type t is written as: integers as
// Long, both kinds of numbers as Double (as GDAL reads numeric), dates and times as
// DateTime (ISO 8601 text, which is how FlatGeobuf holds them), jsonb as Json, the rest
// (text, "") as String.
func columnTypeFor(t store.ColumnType) columnType {
	switch t {
	case store.TypeBigint:
		return colLong
	case store.TypeDouble, store.TypeNumeric:
		return colDouble
	case store.TypeBoolean:
		return colBool
	case store.TypeDate, store.TypeTimestamptz:
		return colDateTime
	case store.TypeJSONB:
		return colJSON
	}
	return colString
}

// appendProperty appends to buf the value v of column i of type t as a feature's
// properties hold it: the column's number (uint16), then the value, little-endian:
// Bool one byte, Long 8, Double 8, the text types a uint32 length and UTF-8 bytes. A
// value that is no value of its column (ok false, buf unchanged) is an error; a value
// that is NULL, as store.ColumnText sees it, appends nothing (FlatGeobuf leaves a NULL
// out). Common value types take a short way; any other goes through store.ColumnText,
// as the stores convert them, so that every writer refuses the same values.
func appendProperty(buf []byte, i int, t columnType, v any) ([]byte, error) {
	start := len(buf)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(i))
	switch x := v.(type) {
	case string:
		if t == colString {
			return appendText(buf, x), nil
		}
	case float64: // what JSON decodes every number to
		if t == colDouble {
			return binary.LittleEndian.AppendUint64(buf, math.Float64bits(x)), nil
		}
		if t == colLong && x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return binary.LittleEndian.AppendUint64(buf, uint64(int64(x))), nil
		}
	case int64:
		if t == colLong {
			return binary.LittleEndian.AppendUint64(buf, uint64(x)), nil
		}
	case bool:
		if t == colBool {
			return append(buf, b2u(x)), nil
		}
	case time.Time:
		if t == colDateTime {
			return appendText(buf, x.UTC().Format(time.RFC3339Nano)), nil
		}
	}
	out, null, err := appendConverted(buf, t, v)
	if err != nil || null {
		return buf[:start], err
	}
	return out, nil
}

// appendConverted appends v converted to t by way of its text (store.ColumnText); null
// says v is NULL and nothing was appended.
func appendConverted(buf []byte, t columnType, v any) (_ []byte, null bool, err error) {
	s, err := store.ColumnText(v, storeType(t))
	switch {
	case err != nil:
		return buf, false, err
	case t == colString:
		return appendText(buf, s), false, nil
	case s == "":
		return buf, true, nil
	}
	switch t {
	case colLong:
		n, err := strconv.ParseInt(s, 10, 64)
		return binary.LittleEndian.AppendUint64(buf, uint64(n)), false, err
	case colDouble:
		f, err := strconv.ParseFloat(s, 64)
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(f)), false, err
	case colBool:
		return append(buf, b2u(s == "true")), false, nil
	case colDateTime:
		s, err = isoTime(s)
		return appendText(buf, s), false, err
	case colJSON:
		if !json.Valid([]byte(s)) {
			return buf, false, errors.New("not JSON")
		}
	}
	return appendText(buf, s), false, nil
}

// storeType is the store type whose checks a value of a column of FlatGeobuf type t
// passes (store.ColumnText): dates are checked here (isoTime).
func storeType(t columnType) store.ColumnType {
	switch t {
	case colLong:
		return store.TypeBigint
	case colDouble:
		return store.TypeDouble
	case colBool:
		return store.TypeBoolean
	case colJSON:
		return store.TypeJSONB
	}
	return store.TypeText
}

// dateLayouts are what servers send for xsd:date and xsd:dateTime, and what
// PostgreSQL's casts accept of them (the GeoPackage store's list); a time without a zone
// is taken as UTC.
var dateLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02Z07:00", time.DateOnly, "2006/01/02",
}

// isoTime is the date or time s as FlatGeobuf's DateTime holds it: ISO 8601, a date
// alone as YYYY-MM-DD, a time in UTC with its zone.
func isoTime(s string) (string, error) {
	if len(s) == len(time.DateOnly) {
		if _, err := time.Parse(time.DateOnly, s); err == nil {
			return s, nil
		}
	}
	for _, l := range dateLayouts {
		if d, err := time.Parse(l, s); err == nil {
			if l == time.DateOnly || l == "2006/01/02" {
				return d.Format(time.DateOnly), nil
			}
			return d.UTC().Format(time.RFC3339Nano), nil
		}
	}
	return "", fmt.Errorf("%q is not a date", s)
}

// appendText appends s as a FlatGeobuf text value: its length, then its bytes.
func appendText(buf []byte, s string) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}
