package spatial

import (
	"testing"

	"github.com/paulmach/orb"
)

func TestSRID(t *testing.T) {
	tests := []struct {
		name    string
		srs     string
		want    int
		wantErr bool
	}{
		{name: "short", srs: "EPSG:4326", want: 4326},
		{name: "short lower case", srs: "epsg:25832", want: 25832},
		{name: "urn empty version", srs: "urn:ogc:def:crs:EPSG::4326", want: 4326},
		{name: "urn with version (ArcGIS)", srs: "urn:ogc:def:crs:EPSG:6.9:4326", want: 4326},
		{name: "x-ogc urn (GeoServer 1.1)", srs: "urn:x-ogc:def:crs:EPSG:4326", want: 4326},
		{name: "x-ogc urn double colon", srs: "urn:x-ogc:def:crs:EPSG::3857", want: 3857},
		{name: "http uri", srs: "http://www.opengis.net/def/crs/EPSG/0/4258", want: 4258},
		{name: "https uri", srs: "https://www.opengis.net/def/crs/EPSG/0/3035", want: 3035},
		{name: "gml epsg.xml", srs: "http://www.opengis.net/gml/srs/epsg.xml#4326", want: 4326},
		{name: "CRS:84", srs: "CRS:84", want: 4326},
		{name: "CRS84 urn", srs: "urn:ogc:def:crs:OGC:1.3:CRS84", want: 4326},
		{name: "CRS84 uri", srs: "http://www.opengis.net/def/crs/OGC/1.3/CRS84", want: 4326},
		{name: "surrounding space", srs: "  EPSG:4326 ", want: 4326},
		{name: "empty", srs: "", wantErr: true},
		{name: "not a code", srs: "EPSG:abc", wantErr: true},
		{name: "negative", srs: "EPSG:-4326", wantErr: true},
		{name: "plus sign", srs: "EPSG:+4326", wantErr: true},
		{name: "zero", srs: "EPSG:0", wantErr: true},
		{name: "too big", srs: "EPSG:99999999999", wantErr: true},
		{name: "other authority", srs: "urn:ogc:def:crs:ESRI::102100", wantErr: true},
		{name: "uri without code", srs: "http://www.opengis.net/def/crs/EPSG/0", wantErr: true},
		{name: "free text", srs: "WGS 84", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SRID(tt.srs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("SRID(%q) error = %v, wantErr %v", tt.srs, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("SRID(%q) = %d, want %d", tt.srs, got, tt.want)
			}
		})
	}
}

func TestLatLonOrder(t *testing.T) {
	forms := []struct {
		name   string
		srs    string
		latLon map[string]bool // by WFS version
	}{
		{name: "EPSG:4326 short", srs: "EPSG:4326", latLon: map[string]bool{"1.0.0": false, "1.1.0": false, "2.0.0": false, "": false}},
		{name: "gml epsg.xml 4326", srs: "http://www.opengis.net/gml/srs/epsg.xml#4326", latLon: map[string]bool{"1.0.0": false, "1.1.0": false, "2.0.0": false}},
		{name: "urn 4326", srs: "urn:ogc:def:crs:EPSG::4326", latLon: map[string]bool{"1.0.0": false, "1.1.0": true, "2.0.0": true, "": true}},
		{name: "urn versioned 4326", srs: "urn:ogc:def:crs:EPSG:6.9:4326", latLon: map[string]bool{"1.0.0": false, "1.1.0": true, "2.0.0": true}},
		{name: "x-ogc 4326", srs: "urn:x-ogc:def:crs:EPSG:4326", latLon: map[string]bool{"1.0.0": false, "1.1.0": true, "2.0.0": true}},
		{name: "uri 4326", srs: "http://www.opengis.net/def/crs/EPSG/0/4326", latLon: map[string]bool{"1.0.0": false, "1.1.0": true, "2.0.0": true}},
		{name: "urn 4258 ETRS89", srs: "urn:ogc:def:crs:EPSG::4258", latLon: map[string]bool{"1.1.0": true, "2.0.0": true}},
		{name: "urn 4269 NAD83", srs: "urn:ogc:def:crs:EPSG::4269", latLon: map[string]bool{"1.1.0": true, "2.0.0": true}},
		{name: "urn 4230 ED50", srs: "urn:ogc:def:crs:EPSG::4230", latLon: map[string]bool{"2.0.0": true}},
		{name: "urn 3857 web mercator", srs: "urn:ogc:def:crs:EPSG::3857", latLon: map[string]bool{"1.1.0": false, "2.0.0": false}},
		{name: "urn 25832 UTM", srs: "urn:ogc:def:crs:EPSG::25832", latLon: map[string]bool{"2.0.0": false}},
		{name: "urn 3035 LAEA northing first", srs: "urn:ogc:def:crs:EPSG::3035", latLon: map[string]bool{"2.0.0": true, "1.0.0": false}},
		{name: "CRS:84", srs: "CRS:84", latLon: map[string]bool{"1.0.0": false, "1.1.0": false, "2.0.0": false}},
		{name: "CRS84 urn", srs: "urn:ogc:def:crs:OGC:1.3:CRS84", latLon: map[string]bool{"1.1.0": false, "2.0.0": false}},
		{name: "CRS84 uri", srs: "http://www.opengis.net/def/crs/OGC/1.3/CRS84", latLon: map[string]bool{"2.0.0": false}},
		{name: "empty", srs: "", latLon: map[string]bool{"2.0.0": false}},
		{name: "garbage", srs: "urn:ogc:def:crs:EPSG::x", latLon: map[string]bool{"2.0.0": false}},
	}
	for _, f := range forms {
		for version, want := range f.latLon {
			t.Run(f.name+"/"+version, func(t *testing.T) {
				if got := LatLonOrder(f.srs, version); got != want {
					t.Errorf("LatLonOrder(%q, %q) = %v, want %v", f.srs, version, got, want)
				}
			})
		}
	}
}

func TestSwapXY(t *testing.T) {
	tests := []struct {
		name string
		in   orb.Geometry
		want orb.Geometry
	}{
		{name: "nil", in: nil, want: nil},
		{name: "point", in: orb.Point{1, 2}, want: orb.Point{2, 1}},
		{name: "linestring", in: orb.LineString{{1, 2}, {3, 4}}, want: orb.LineString{{2, 1}, {4, 3}}},
		{name: "polygon", in: orb.Polygon{{{1, 2}, {3, 4}, {5, 6}, {1, 2}}}, want: orb.Polygon{{{2, 1}, {4, 3}, {6, 5}, {2, 1}}}},
		{name: "multipolygon", in: orb.MultiPolygon{{{{1, 2}}}}, want: orb.MultiPolygon{{{{2, 1}}}}},
		{name: "multipoint", in: orb.MultiPoint{{1, 2}}, want: orb.MultiPoint{{2, 1}}},
		{name: "multilinestring", in: orb.MultiLineString{{{1, 2}}}, want: orb.MultiLineString{{{2, 1}}}},
		{name: "collection", in: orb.Collection{orb.Point{1, 2}, orb.LineString{{3, 4}}}, want: orb.Collection{orb.Point{2, 1}, orb.LineString{{4, 3}}}},
		{name: "bound", in: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}, want: orb.Bound{Min: orb.Point{2, 1}, Max: orb.Point{4, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SwapXY(tt.in)
			if (got == nil) != (tt.want == nil) || got != nil && !orb.Equal(got, tt.want) {
				t.Errorf("SwapXY = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLooksSwapped(t *testing.T) {
	cologne := orb.Bound{Min: orb.Point{6.8, 50.8}, Max: orb.Point{7.1, 51.1}}
	tests := []struct {
		name        string
		g           orb.Geometry
		box         orb.Bound
		swapped, ok bool
	}{
		{name: "lon/lat inside", g: orb.Point{6.95, 50.94}, box: cologne, swapped: false, ok: true},
		{name: "lat/lon", g: orb.Point{50.94, 6.95}, box: cologne, swapped: true, ok: true},
		{name: "polygon crossing the box, no vertex inside", g: orb.Polygon{{{6, 50}, {8, 50}, {8, 52}, {6, 52}, {6, 50}}}, box: cologne, swapped: false, ok: true},
		{name: "swapped polygon crossing the box", g: orb.Polygon{{{50, 6}, {50, 8}, {52, 8}, {52, 6}, {50, 6}}}, box: cologne, swapped: true, ok: true},
		{name: "y beyond 90 can only be a longitude", g: orb.Point{-33.9, 151.2}, box: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{1, 1}}, swapped: true, ok: true},
		{name: "box on the diagonal is ambiguous", g: orb.Point{40.5, 40.6}, box: orb.Bound{Min: orb.Point{40, 40}, Max: orb.Point{41, 41}}, ok: false},
		{name: "far from the box either way", g: orb.Point{-120, 35}, box: cologne, ok: false},
		{name: "empty geometry", g: orb.LineString{}, box: cologne, ok: false},
		{name: "nil geometry", g: nil, box: cologne, ok: false},
		{name: "collection", g: orb.Collection{orb.Point{50.9, 6.9}}, box: cologne, swapped: true, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			swapped, ok := LooksSwapped(tt.g, tt.box)
			if swapped != tt.swapped || ok != tt.ok {
				t.Errorf("LooksSwapped = (%v, %v), want (%v, %v)", swapped, ok, tt.swapped, tt.ok)
			}
		})
	}
}
