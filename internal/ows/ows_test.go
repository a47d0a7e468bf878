package ows

import "testing"

func TestURL(t *testing.T) {
	tests := []struct {
		name, base string
		params     [][2]string
		want       string
	}{
		{name: "plain", base: "http://h/wfs", params: [][2]string{{"SERVICE", "WFS"}, {"REQUEST", "GetCapabilities"}},
			want: "http://h/wfs?SERVICE=WFS&REQUEST=GetCapabilities"},
		{name: "keeps the base's own", base: "http://h/cgi-bin/mapserv?map=/srv/a.map", params: [][2]string{{"SERVICE", "WFS"}},
			want: "http://h/cgi-bin/mapserv?map=%2Fsrv%2Fa.map&SERVICE=WFS"},
		{name: "replaces ours whatever their case", base: "http://h/wfs?service=wms&version=1.0.0&key=k", params: [][2]string{{"SERVICE", "WFS"}, {"VERSION", "2.0.0"}},
			want: "http://h/wfs?key=k&SERVICE=WFS&VERSION=2.0.0"},
		{name: "escapes values", base: "http://h/wfs", params: [][2]string{{"TYPENAMES", "gf:parcels"}, {"BBOX", "1,2,3,4,urn:ogc:def:crs:EPSG::4326"}},
			want: "http://h/wfs?TYPENAMES=gf%3Aparcels&BBOX=1%2C2%2C3%2C4%2Curn%3Aogc%3Adef%3Acrs%3AEPSG%3A%3A4326"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URL(tt.base, tt.params); got != tt.want {
				t.Errorf("URL = %s\n want %s", got, tt.want)
			}
		})
	}
}
