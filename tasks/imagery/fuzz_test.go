package imagery

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func FuzzParseItemCollection(f *testing.F) {
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"id":"a","collection":"c","bbox":[0,0,1,1],"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]},"properties":{"datetime":"2024-01-01T00:00:00Z"},"assets":{"visual":{"href":"https://x/a.tif","file:checksum":"1220aa"}}}],"links":[{"rel":"next","href":"/search","method":"POST","body":{"token":"n"},"merge":true}]}`))
	f.Add([]byte(`{"type":"FeatureCollection","features":[]}`))
	f.Add([]byte(`<html>502</html>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ic, err := ParseItemCollection(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, it := range ic.Features {
			if it.ID == "" {
				t.Fatal("an item without id was accepted")
			}
			_ = itemBound(it)
		}
		_ = nextPage(ic, pageSpec{Method: "POST", Href: "http://h/search", Body: []byte(`{"limit":5}`)})
	})
}

func FuzzParseCapabilities(f *testing.F) {
	f.Add([]byte(`<WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms"><Service><MaxWidth>2048</MaxWidth><MaxHeight>2048</MaxHeight></Service><Capability><Request><GetMap><Format>image/png</Format></GetMap></Request><Layer><Layer><Name>ortho</Name></Layer></Layer></Capability></WMS_Capabilities>`))
	f.Add([]byte(`<ServiceExceptionReport><ServiceException code="x">boom</ServiceException></ServiceExceptionReport>`))
	f.Add([]byte(`<WMT_MS_Capabilities version="1.1.1"><Capability><Layer><Name>a</Name></Layer></Capability></WMT_MS_Capabilities>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCapabilities(bytes.NewReader(b))
		if err != nil {
			return
		}
		if c.MaxWidth < 0 || c.MaxHeight < 0 {
			t.Fatalf("negative max size %d x %d", c.MaxWidth, c.MaxHeight)
		}
	})
}

func FuzzParseMultihash(f *testing.F) {
	f.Add("1220" + strings.Repeat("ab", 32))
	f.Add("d50110" + strings.Repeat("00", 16))
	f.Add("1114" + strings.Repeat("01", 20))
	f.Add("12")
	f.Fuzz(func(t *testing.T, s string) {
		alg, d, ok := parseMultihash(s)
		if ok && (alg == "" || len(d) == 0) {
			t.Fatalf("%q: %s %x", s, alg, d)
		}
	})
}

func TestParseMultihash(t *testing.T) {
	tests := []struct {
		in, alg string
		ok      bool
	}{
		{"1220" + strings.Repeat("ab", 32), "sha2-256", true},
		{"1340" + strings.Repeat("ab", 64), "sha2-512", true},
		{"1114" + strings.Repeat("ab", 20), "sha1", true},
		{"d50110" + strings.Repeat("ab", 16), "md5", true},
		{"1220" + strings.Repeat("ab", 31), "", false}, // short digest
		{"zz", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		alg, d, ok := parseMultihash(tt.in)
		if alg != tt.alg || ok != tt.ok {
			t.Errorf("%q: %s %v, want %s %v", tt.in, alg, ok, tt.alg, tt.ok)
		}
		if ok && hex.EncodeToString(d) != tt.in[len(tt.in)-2*len(d):] {
			t.Errorf("%q: digest %x", tt.in, d)
		}
	}
}
