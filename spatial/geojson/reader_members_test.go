package geojson

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

func TestCountMember(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want int64
		ok   bool
	}{
		{name: "a count", raw: "12", want: 12, ok: true},
		{name: "unknown", raw: `"unknown"`, want: -1, ok: true},
		{name: "negative", raw: "-1", want: -1, ok: true},
		{name: "past 2^53", raw: "9007199254740994", want: -1, ok: true},
		{name: "a fraction is cut", raw: "12.9", want: 12, ok: true},
		{name: "out of range", raw: "1e999", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := countMember([]byte(tt.raw))
			if n != tt.want || ok != tt.ok {
				t.Errorf("got %d, %v; want %d, %v", n, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNextLink(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		next string // already known
		want string
		ok   bool
	}{
		{name: "the first next link", raw: `[{"rel":"self","href":"s"},{"rel":"next","href":"a"},{"rel":"next","href":"b"}]`, want: "a", ok: true},
		{name: "names fold", raw: `[{"REL":"next","HREF":"b"}]`, want: "b", ok: true},
		{name: "a next link without href gives way", raw: `[{"rel":"next"},{"rel":"next","href":"b"}]`, want: "b", ok: true},
		{name: "known already", raw: `[{"rel":"next","href":"b"}]`, next: "a", want: "a", ok: true},
		{name: "rel is exact", raw: `[{"rel":"Next","href":"b"}]`, ok: true},
		{name: "null", raw: `null`, ok: true},
		{name: "not an array", raw: `{"rel":"next","href":"b"}`, next: "a", want: "a", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := nextLink([]byte(tt.raw), tt.next)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCrsName(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
		ok   bool
	}{
		{name: "named", raw: `{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::4326"}}`, want: "urn:ogc:def:crs:EPSG::4326", ok: true},
		{name: "without a name", raw: `{"type":"link"}`, ok: true},
		{name: "a name that is no string", raw: `{"properties":{"name":4326}}`, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := crsName([]byte(tt.raw))
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestExceptionsReport(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want *spatial.ExceptionReport
	}{
		{name: "GeoServer's", raw: `[{"code":"InvalidParameterValue","locator":"typeName","text":" Feature type unknown \n"}]`,
			want: &spatial.ExceptionReport{Code: "InvalidParameterValue", Locator: "typeName", Text: "Feature type unknown"}},
		{name: "the first code, every text", raw: `[{"code":"A","text":"one"},{"code":"B","locator":"l","text":"  "},{"text":"two"}]`,
			want: &spatial.ExceptionReport{Code: "A", Text: "one; two"}},
		{name: "empty", raw: `[]`, want: &spatial.ExceptionReport{}},
		{name: "not an array", raw: `{"code":"A"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := exceptionsReport([]byte(tt.raw))
			if ok != (tt.want != nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, ok, tt.want)
			}
		})
	}
}

// TestDecodeMember checks that each decoded top-level member keeps what it
// says, and that one encoding/json cannot decode keeps nothing.
func TestDecodeMember(t *testing.T) {
	tests := []struct {
		name string
		key  string
		raw  string
		want func(r *Reader) any
		kept any
		// always: the value is kept as written, not decoded.
		always bool
	}{
		{name: "numberMatched", key: "numberMatched", raw: "5", want: func(r *Reader) any { return r.meta.NumberMatched }, kept: int64(5)},
		{name: "numberReturned", key: "numberReturned", raw: "4", want: func(r *Reader) any { return r.meta.NumberReturned }, kept: int64(4)},
		{name: "totalFeatures", key: "totalFeatures", raw: "3", want: func(r *Reader) any { return r.total }, kept: int64(3)},
		{name: "links", key: "links", raw: `[{"rel":"next","href":"n"}]`, want: func(r *Reader) any { return r.meta.Next }, kept: "n"},
		{name: "crs", key: "crs", raw: `{"properties":{"name":"EPSG:25832"}}`, want: func(r *Reader) any { return r.meta.SRSName }, kept: "EPSG:25832"},
		{name: "type", key: "type", raw: `"Feature"`, want: func(r *Reader) any { return r.typ }, kept: "Feature"},
		{name: "code", key: "code", raw: `404`, want: func(r *Reader) any { return r.code }, kept: "404"},
		{name: "description", key: "description", raw: `"gone"`, want: func(r *Reader) any { return r.descr }, kept: "gone"},
		{name: "error", key: "error", raw: `{"code":400,"message":"bad"}`, want: func(r *Reader) any { return r.exc }, kept: &spatial.ExceptionReport{Code: "400", Text: "bad"}},
		{name: "exceptions", key: "exceptions", raw: `[{"code":"X","text":"t"}]`, want: func(r *Reader) any { return r.exc }, kept: &spatial.ExceptionReport{Code: "X", Text: "t"}},
		{name: "id", key: "id", raw: `"f.1"`, want: func(r *Reader) any { return fmt.Sprintf("%s %d", r.single.id, r.singleN) }, kept: `"f.1" 1`, always: true},
		{name: "geometry", key: "geometry", raw: `{"type":"Point"}`, want: func(r *Reader) any { return fmt.Sprintf("%s %d", r.single.geometry, r.singleN) }, kept: `{"type":"Point"} 1`, always: true},
		{name: "properties", key: "properties", raw: `{"a":1}`, want: func(r *Reader) any { return r.single.props }, kept: map[string]any{"a": 1.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !decodedMember(tt.key) {
				t.Fatalf("%q is not decoded", tt.key)
			}
			r := NewReader(nil, Options{})
			before := tt.want(r)
			if !r.decodeMember(tt.key, []byte(tt.raw)) {
				t.Fatalf("%s refused", tt.raw)
			}
			if got := tt.want(r); !reflect.DeepEqual(got, tt.kept) {
				t.Errorf("kept %#v, want %#v", got, tt.kept)
			}
			if tt.always {
				return
			}
			r = NewReader(nil, Options{})
			if r.decodeMember(tt.key, []byte(`[1e999]`)) {
				t.Fatal("a value out of range was decoded")
			}
			if got := tt.want(r); !reflect.DeepEqual(got, before) {
				t.Errorf("a refused value kept %#v", got)
			}
		})
	}
	for _, key := range []string{"features", "bbox", "timeStamp", "Type", "next"} {
		if decodedMember(key) {
			t.Errorf("%q is decoded", key)
		}
	}
}
