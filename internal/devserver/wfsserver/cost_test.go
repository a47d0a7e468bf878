package wfsserver

import (
	"context"
	"io"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestServerCost checks the cost model the benchmarks rely on: deep STARTINDEX pages
// cost more than early ones, hits cost a tenth per row, and GML costs twice GeoJSON.
func TestServerCost(t *testing.T) {
	var mu sync.Mutex
	var slept time.Duration
	s := New(Options{Features: 5000, RowCost: time.Microsecond, EncodeCost: 10 * time.Microsecond,
		Sleep: func(ctx context.Context, d time.Duration) bool {
			mu.Lock()
			slept += d
			mu.Unlock()
			return true
		}})
	cost := func(query string) time.Duration {
		mu.Lock()
		slept = 0
		mu.Unlock()
		r := httptest.NewRequest("GET", "/wfs?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES=gf:parcels"+query, nil)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		_, _ = io.Copy(io.Discard, w.Body)
		mu.Lock()
		defer mu.Unlock()
		return slept
	}
	tests := []struct {
		name  string
		query string
		want  time.Duration
	}{
		{name: "first page geojson", query: "&COUNT=1000&OUTPUTFORMAT=application/json", want: 1000*time.Microsecond + 1000*10*time.Microsecond},
		{name: "deep page geojson", query: "&COUNT=1000&STARTINDEX=4000&OUTPUTFORMAT=application/json", want: 5000*time.Microsecond + 1000*10*time.Microsecond},
		{name: "first page gml", query: "&COUNT=1000", want: 1000*time.Microsecond + 1000*20*time.Microsecond},
		{name: "hits", query: "&RESULTTYPE=hits", want: 500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cost(tt.query); got != tt.want {
				t.Errorf("modelled cost = %v, want %v", got, tt.want)
			}
		})
	}
}
