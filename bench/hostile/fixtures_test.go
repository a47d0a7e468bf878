package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/arcgisserver"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// page is an items answer as the tests read it.
type page struct {
	NumberMatched  *int `json:"numberMatched"`
	NumberReturned int  `json:"numberReturned"`
	Features       []struct {
		ID       string `json:"id"`
		Geometry struct {
			Type        string          `json:"type"`
			Coordinates json.RawMessage `json:"coordinates"`
		} `json:"geometry"`
	} `json:"features"`
	Links []struct{ Rel, Href string } `json:"links"`
}

func get(t *testing.T, h http.Handler, target string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.Bytes()
}

func items(t *testing.T, h http.Handler, query string) page {
	t.Helper()
	return itemsOf(t, h, "parcels", query)
}

func itemsOf(t *testing.T, h http.Handler, collection, query string) page {
	t.Helper()
	code, body := get(t, h, "/ogcapi/collections/"+collection+"/items?"+query)
	if code != http.StatusOK {
		t.Fatalf("items?%s: HTTP %d: %s", query, code, body)
	}
	var p page
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("items?%s: %v", query, err)
	}
	return p
}

func TestOGCAPIFixtures(t *testing.T) {
	srv := wfsserver.New(wfsserver.Options{Features: 100, Seed: 1})
	view := newFilteredView(srv, func(i int) bool { return i%10 == 3 })
	view.Hide.Store(true)
	same, err := newSamePage(wfsserver.New(wfsserver.Options{Features: 100, Seed: 1, CountDefault: 50}), 50)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		h       http.Handler
		query   string
		matched int // -1: no numberMatched
		ids     int // distinct features on the page
		check   func(t *testing.T, p page)
	}{
		{name: "omitting leaves the parcels out, counts unchanged", h: omitting(srv, 5, 50, 99), query: "limit=1000",
			matched: 100, ids: 97},
		{name: "filtered view lowers the count to match", h: view, query: "limit=1000", matched: 90, ids: 90},
		{name: "counting high", h: countingHigh(srv, 1_000_000_000_000), query: "limit=10", matched: 1_000_000_000_000, ids: 10},
		{name: "same page, next to itself", h: same, query: "limit=50&offset=700&bbox=11.5,48.1,11.51,48.11", matched: -1, ids: 50,
			check: func(t *testing.T, p page) {
				var next string
				for _, l := range p.Links {
					if l.Rel == "next" {
						next = l.Href
					}
				}
				if !strings.HasSuffix(next, "/items?limit=50&offset=700&bbox=11.5,48.1,11.51,48.11") {
					t.Errorf("next = %q, want the request itself", next)
				}
			}},
		{name: "unclosed ring", h: unclosedRing(srv, 3), query: "limit=10", matched: 100, ids: 10,
			check: func(t *testing.T, p page) {
				for _, f := range p.Features {
					var poly [][][2]float64
					if f.Geometry.Type == "MultiPolygon" {
						var mp [][][][2]float64
						if err := json.Unmarshal(f.Geometry.Coordinates, &mp); err != nil {
							t.Fatal(err)
						}
						poly = mp[0]
					} else if err := json.Unmarshal(f.Geometry.Coordinates, &poly); err != nil {
						t.Fatal(err)
					}
					ring := poly[0]
					if closed := ring[0] == ring[len(ring)-1]; closed != (f.ID != "parcels.3") {
						t.Errorf("%s: ring closed = %v", f.ID, closed)
					}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := items(t, tt.h, tt.query)
			switch {
			case tt.matched < 0 && p.NumberMatched != nil:
				t.Errorf("numberMatched = %d, want none", *p.NumberMatched)
			case tt.matched >= 0 && (p.NumberMatched == nil || *p.NumberMatched != tt.matched):
				t.Errorf("numberMatched = %v, want %d", p.NumberMatched, tt.matched)
			}
			seen := map[string]bool{}
			for _, f := range p.Features {
				seen[f.ID] = true
			}
			if len(seen) != tt.ids || p.NumberReturned != len(p.Features) {
				t.Errorf("%d distinct features, numberReturned %d of %d, want %d", len(seen), p.NumberReturned, len(p.Features), tt.ids)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

func TestFilteredViewAnswersHiddenByID(t *testing.T) {
	srv := wfsserver.New(wfsserver.Options{Features: 100, Seed: 1})
	view := newFilteredView(srv, func(i int) bool { return i%10 == 3 })
	view.Hide.Store(true)
	for _, tt := range []struct {
		name string
		id   string
		code int
	}{{"hidden from the listing", "parcels.13", 200}, {"listed", "parcels.14", 200}, {"never existed", "parcels.100", 404}} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, view, "/ogcapi/collections/parcels/items/"+tt.id)
			if code != tt.code {
				t.Fatalf("HTTP %d, want %d: %s", code, tt.code, body)
			}
			var f struct{ ID string }
			if code == 200 && (json.Unmarshal(body, &f) != nil || f.ID != tt.id) {
				t.Errorf("answered %s", body)
			}
		})
	}
}

func TestArcGISFixtures(t *testing.T) {
	query := func(h http.Handler, form url.Values) map[string]json.RawMessage {
		t.Helper()
		form.Set("f", "json")
		form.Set("where", "1=1")
		req := httptest.NewRequest(http.MethodPost, "/arcgis/rest/services/Parcels/FeatureServer/0/query", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%v: %s", err, rec.Body.Bytes())
		}
		return doc
	}
	srv := arcgisserver.New(arcgisserver.Options{Features: 10, Seed: 1})
	t.Run("always exceeded", func(t *testing.T) {
		doc := query(alwaysExceeded(srv), url.Values{"returnIdsOnly": {"true"}})
		if string(doc["exceededTransferLimit"]) != "true" {
			t.Errorf("exceededTransferLimit = %s", doc["exceededTransferLimit"])
		}
	})
	t.Run("phantom ids", func(t *testing.T) {
		h := phantomIDs(srv, 1000)
		var ids []int
		if err := json.Unmarshal(query(h, url.Values{"returnIdsOnly": {"true"}})["objectIds"], &ids); err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1000 || ids[999] != 1000 {
			t.Errorf("%d ids, last %d; want 1000", len(ids), ids[len(ids)-1])
		}
		if c := string(query(h, url.Values{"returnCountOnly": {"true"}})["count"]); c != "1000" {
			t.Errorf("count = %s, want 1000", c)
		}
		var feats []json.RawMessage
		_ = json.Unmarshal(query(h, url.Values{"objectIds": {"5,500,900"}, "outFields": {"*"}})["features"], &feats)
		if len(feats) != 1 {
			t.Errorf("%d features for ids 5, 500 and 900, want 1", len(feats))
		}
	})
}

func TestGiantsFeature(t *testing.T) {
	g := newGiants(4, 1000)
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	g.writeFeature(w, 2)
	_ = w.Flush()
	var f struct {
		Geometry struct{ Coordinates [][][2]float64 }
	}
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	ring := f.Geometry.Coordinates[0]
	if len(ring) != 1000 || ring[0] != ring[999] {
		t.Errorf("%d positions, closed %v; want 1000, closed", len(ring), ring[0] == ring[len(ring)-1])
	}
	// One feature a page whatever the limit, counting them all.
	if p := itemsOf(t, g, "giants", "limit=100&offset=3"); *p.NumberMatched != 4 || len(p.Features) != 1 || p.Features[0].ID != "giants.3" || len(p.Links) != 0 {
		t.Errorf("whole area at offset 3: matched %d, %d features, links %v", *p.NumberMatched, len(p.Features), p.Links)
	}
	b := g.bound(1)
	f64 := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	q := url.Values{"bbox": {strings.Join([]string{f64(b.Min[0]), f64(b.Min[1]), f64(b.Max[0]), f64(b.Max[1])}, ",")}}
	if p := itemsOf(t, g, "giants", q.Encode()); *p.NumberMatched != 1 || p.Features[0].ID != "giants.1" {
		t.Errorf("quadrant 1: matched %d, %v", *p.NumberMatched, p.Features)
	}
}
