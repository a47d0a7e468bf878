package gml

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

// TestReuseFeatures reads documents with and without ReuseFeatures: each feature's
// properties are the same as it arrives (the properties of the feature before it are
// gone; a refused feature in between changes nothing), and with reuse one map serves
// every feature.
func TestReuseFeatures(t *testing.T) {
	varied := fmt.Sprintf(genHeader, 4) + `<wfs:member><app:p gml:id="p.1"><app:a>1</app:a><app:s>one</app:s><app:s>again</app:s></app:p></wfs:member>
<wfs:member><app:p gml:id="p.2"><app:b>two</app:b></app:p></wfs:member>
<wfs:member><app:p gml:id="p.3"><app:c>3</app:c><app:geom><gml:Point><gml:pos>1</gml:pos></gml:Point></app:geom></app:p></wfs:member>
<wfs:member><app:p gml:id="p.4"></app:p></wfs:member>
<wfs:member><app:p gml:id="p.5"><app:a>5</app:a></app:p></wfs:member>
</wfs:FeatureCollection>`
	dev, err := os.ReadFile("testdata/devserver-wfs20.xml")
	if err != nil {
		t.Fatal(err)
	}
	read := func(doc string, reuse bool) ([]map[string]any, []string, map[uintptr]bool) {
		r := NewReader(strings.NewReader(doc), Options{})
		if reuse {
			r.ReuseFeatures()
		}
		var props []map[string]any
		var refused []string
		ptrs := map[uintptr]bool{}
		for {
			f, err := r.Next()
			if err == io.EOF {
				return props, refused, ptrs
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				refused = append(refused, fe.Error())
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			props = append(props, maps.Clone(f.Properties))
			ptrs[reflect.ValueOf(f.Properties).Pointer()] = true
		}
	}
	for name, doc := range map[string]string{"varied": varied, "devserver": string(dev)} {
		t.Run(name, func(t *testing.T) {
			want, wantRefused, fresh := read(doc, false)
			got, refused, reused := read(doc, true)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(refused, wantRefused) {
				t.Fatalf("with reuse:\n%v\n%v\nwithout:\n%v\n%v", got, refused, want, wantRefused)
			}
			if len(fresh) != len(want) || len(reused) != 1 {
				t.Errorf("%d features in %d maps without reuse, %d with", len(want), len(fresh), len(reused))
			}
			if name == "varied" && len(wantRefused) != 1 {
				t.Errorf("refused %v, want the one with a one-number position", wantRefused)
			}
		})
	}
}
