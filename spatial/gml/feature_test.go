package gml

import (
	"encoding/xml"
	"reflect"
	"testing"
)

func TestPropertyAttrs(t *testing.T) {
	xsiNil := func(v string) xml.Attr { return xml.Attr{Name: xml.Name{Space: "xsi", Local: "nil"}, Value: v} }
	href := xml.Attr{Name: xml.Name{Space: "xlink", Local: "href"}, Value: "#p1"}
	tests := []struct {
		name     string
		attrs    []xml.Attr
		wantNil  bool
		wantHref string
	}{
		{name: "none"},
		{name: "xsi:nil true", attrs: []xml.Attr{xsiNil("true")}, wantNil: true},
		{name: "xsi:nil 1", attrs: []xml.Attr{xsiNil("1")}, wantNil: true},
		{name: "xsi:nil false", attrs: []xml.Attr{xsiNil("false")}},
		{name: "xsi:nil TRUE is not true", attrs: []xml.Attr{xsiNil("TRUE")}},
		{name: "unprefixed nil", attrs: attrs("nil", "true")},
		{name: "xlink:href", attrs: []xml.Attr{href}, wantHref: "#p1"},
		{name: "unprefixed href", attrs: attrs("href", "#p1")},
		{name: "both", attrs: []xml.Attr{href, xsiNil("true")}, wantNil: true, wantHref: "#p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isNil, href := propertyAttrs(tt.attrs)
			if isNil != tt.wantNil || href != tt.wantHref {
				t.Errorf("propertyAttrs = %v, %q, want %v, %q", isNil, href, tt.wantNil, tt.wantHref)
			}
		})
	}
}

func TestPropertyValue(t *testing.T) {
	tests := []struct {
		name     string
		hasChild bool
		flat     string
		isNil    bool
		text     string
		href     string
		want     any
	}{
		{name: "text as written", text: " a b ", want: " a b "},
		{name: "empty element", text: "", want: ""},
		{name: "nil", isNil: true, want: nil},
		{name: "nil wins over text", isNil: true, text: "x", want: nil},
		{name: "href of an empty element", href: "#p1", want: "#p1"},
		{name: "text wins over href", text: "x", href: "#p1", want: "x"},
		{name: "nil wins over href", isNil: true, href: "#p1", want: nil},
		{name: "complex, trimmed", hasChild: true, flat: " a b ", text: "ignored", want: "a b"},
		{name: "complex and blank", hasChild: true, flat: "  ", want: absent},
		{name: "complex wins over nil", hasChild: true, flat: "a", isNil: true, want: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := propertyValue(tt.hasChild, []byte(tt.flat), tt.isNil, []byte(tt.text), tt.href)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("propertyValue = %#v, want %#v", got, tt.want)
			}
		})
	}
}
