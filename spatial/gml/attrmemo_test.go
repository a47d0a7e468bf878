package gml

import (
	"encoding/xml"
	"testing"
)

// TestAttrMemo checks that the memo returns the text it is given, whatever it kept
// before, and shares the string of a repeated value.
func TestAttrMemo(t *testing.T) {
	var m attrMemo
	srs := xml.Name{Space: "", Local: "srsName"}
	m.value(srs, []byte("EPSG:4326"))
	for i := range 20 { // more names than slots, srsName among them
		name := xml.Name{Local: string(rune('a' + i))}
		if got := m.value(name, []byte("v")); got != "v" {
			t.Fatalf("%s = %q", name.Local, got)
		}
		if got := m.value(srs, []byte("EPSG:4326")); got != "EPSG:4326" {
			t.Fatalf("srsName = %q", got)
		}
	}
	if got := m.value(srs, []byte("EPSG:25832")); got != "EPSG:25832" {
		t.Fatalf("changed srsName = %q", got)
	}
	if got := m.value(xml.Name{Space: "gml", Local: "srsName"}, []byte("x")); got != "x" {
		t.Fatalf("gml:srsName = %q", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { m.value(srs, []byte("EPSG:25832")) }); allocs != 0 {
		t.Errorf("a repeated value allocates %v times", allocs)
	}
}
