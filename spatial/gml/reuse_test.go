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

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/spatial"
)

// TestReuseFeatures reads documents with and without ReuseFeatures: each feature's
// properties are the same as it arrives (the properties of the feature before it are
// gone; a refused feature in between changes nothing; the ids are the same), and with
// reuse one map and one Feature serve every feature.
func TestReuseFeatures(t *testing.T) {
	varied := fmt.Sprintf(genHeader, 7) + `<wfs:member><app:p gml:id="p.1"><app:a>1</app:a><app:s>one</app:s><app:s>again</app:s></app:p></wfs:member>
<wfs:member><app:p gml:id="p.2"><app:b>two</app:b></app:p></wfs:member>
<wfs:member><app:p gml:id="p.3"><app:c>3</app:c><app:geom><gml:Point><gml:pos>1</gml:pos></gml:Point></app:geom></app:p></wfs:member>
<wfs:member><app:p gml:id="p.4"></app:p></wfs:member>
<wfs:member><app:p gml:id="p.5"><app:a>5</app:a></app:p></wfs:member>
<wfs:member><app:p gml:id="p.6"><app:geom><gml:Polygon><gml:exterior><gml:LinearRing><gml:posList>0 0 4 0 4 4 0 0</gml:posList></gml:LinearRing></gml:exterior><gml:interior><gml:LinearRing><gml:posList>1 1 2 1 2 2 1 1</gml:posList></gml:LinearRing></gml:interior></gml:Polygon></app:geom><app:other><gml:LineString><gml:posList>9 9 8 8</gml:posList></gml:LineString></app:other></app:p></wfs:member>
<wfs:member><app:p gml:id="p.7"><app:geom><gml:MultiSurface><gml:surfaceMember><gml:Polygon><gml:exterior><gml:LinearRing><gml:posList>5 5 6 5 6 6 5 5</gml:posList></gml:LinearRing></gml:exterior></gml:Polygon></gml:surfaceMember><gml:surfaceMember><gml:Polygon><gml:exterior><gml:LinearRing><gml:posList>7 7 8 7 8 8 7 7</gml:posList></gml:LinearRing></gml:exterior><gml:interior><gml:LinearRing><gml:posList>7.1 7.1 7.2 7.1 7.2 7.2 7.1 7.1</gml:posList></gml:LinearRing></gml:interior></gml:Polygon></gml:surfaceMember></gml:MultiSurface></app:geom></app:p></wfs:member>
<wfs:member><app:p gml:id="p.8"><app:geom><gml:MultiCurve><gml:curveMember><gml:LineString><gml:posList>1 1 2 2</gml:posList></gml:LineString></gml:curveMember><gml:curveMember><gml:LineString><gml:posList>3 3 4 4 5 5</gml:posList></gml:LineString></gml:curveMember></gml:MultiCurve></app:geom></app:p></wfs:member>
</wfs:FeatureCollection>`
	dev, err := os.ReadFile("testdata/devserver-wfs20.xml")
	if err != nil {
		t.Fatal(err)
	}
	// events is what happened to each feature in order: stored with its id, or refused.
	read := func(doc string, reuse bool) (props []map[string]any, geoms []orb.Geometry, events []string, ptrs map[uintptr]bool, feats map[*spatial.Feature]bool) {
		r := NewReader(strings.NewReader(doc), Options{})
		if reuse {
			r.ReuseFeatures()
		}
		ptrs, feats = map[uintptr]bool{}, map[*spatial.Feature]bool{}
		for {
			f, err := r.Next()
			if err == io.EOF {
				return props, geoms, events, ptrs, feats
			}
			var fe *spatial.FeatureError
			if errors.As(err, &fe) {
				events = append(events, fe.Error())
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			props = append(props, maps.Clone(f.Properties))
			geoms = append(geoms, orb.Clone(f.Geometry))
			events = append(events, "stored "+f.ID)
			ptrs[reflect.ValueOf(f.Properties).Pointer()] = true
			feats[f] = true
		}
	}
	for name, doc := range map[string]string{"varied": varied, "devserver": string(dev)} {
		t.Run(name, func(t *testing.T) {
			want, wantGeoms, wantEvents, fresh, _ := read(doc, false)
			got, geoms, events, reused, feats := read(doc, true)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(events, wantEvents) {
				t.Fatalf("with reuse:\n%v\n%v\nwithout:\n%v\n%v", got, events, want, wantEvents)
			}
			if !reflect.DeepEqual(geoms, wantGeoms) {
				t.Fatalf("geometries with reuse:\n%v\nwithout:\n%v", geoms, wantGeoms)
			}
			if len(fresh) != len(want) || len(reused) != 1 || len(feats) != 1 {
				t.Errorf("%d features in %d maps without reuse, %d maps and %d Features with", len(want), len(fresh), len(reused), len(feats))
			}
			if stored := len(want); name == "varied" && len(wantEvents) != stored+1 {
				t.Errorf("%v: want one refused, the one with a one-number position", wantEvents)
			}
		})
	}
}
