package wfsserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestOutage: the first feature requests are served, then every one fails for the
// outage's length, then the host is back; counts and capabilities are never failed.
func TestOutage(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fail := Outage(2, time.Minute, func() time.Time { return now })
	get := httptest.NewRequest("GET", "/wfs?SERVICE=WFS&REQUEST=GetFeature&TYPENAMES=gf:parcels", nil)
	hits := httptest.NewRequest("GET", "/wfs?SERVICE=WFS&REQUEST=GetFeature&RESULTTYPE=hits", nil)
	caps := httptest.NewRequest("GET", "/wfs?SERVICE=WFS&REQUEST=GetCapabilities", nil)
	items := httptest.NewRequest("GET", "/ogcapi/collections/parcels/items?limit=100", nil)
	tests := []struct {
		name    string
		advance time.Duration
		r       string
		want    bool
	}{
		{name: "first feature request served", r: "get"},
		{name: "a count is never failed", r: "hits"},
		{name: "second served", r: "items"},
		{name: "the outage begins", r: "get", want: true},
		{name: "capabilities still answer", r: "caps"},
		{name: "still down", advance: 59 * time.Second, r: "items", want: true},
		{name: "back after a minute", advance: time.Second, r: "get"},
	}
	reqs := map[string]*http.Request{"get": get, "hits": hits, "caps": caps, "items": items}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = now.Add(tt.advance)
			if got := fail(reqs[tt.r]); got != tt.want {
				t.Errorf("failed = %v, want %v", got, tt.want)
			}
		})
	}
}
