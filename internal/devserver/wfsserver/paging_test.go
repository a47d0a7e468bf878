package wfsserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
)

// harvest pages through a layer with STARTINDEX and returns how often each
// parcel was delivered.
func harvest(t *testing.T, ts *httptest.Server, n int, extra ...string) []int {
	t.Helper()
	seen := make([]int, n)
	for start := 0; ; {
		args := append([]string{"SERVICE", "WFS", "REQUEST", "GetFeature", "STARTINDEX", strconv.Itoa(start)}, extra...)
		p := parsePage(t, get(t, ts, kvp(args...)))
		for _, i := range p.ids {
			seen[i]++
		}
		if len(p.ids) == 0 {
			return seen
		}
		start += len(p.ids)
	}
}

func TestPagingWithSortByCoversAllOnce(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		extra []string
	}{
		{"2.0 GML count", Options{}, []string{"VERSION", "2.0.0", "TYPENAMES", "gf:parcels", "COUNT", "700"}},
		{"2.0 json", Options{}, []string{"VERSION", "2.0.0", "TYPENAMES", "parcels", "COUNT", "1000", "OUTPUTFORMAT", "application/json"}},
		{"1.1 maxfeatures capped", Options{CountDefault: 300}, []string{"VERSION", "1.1.0", "TYPENAME", "gf:parcels", "MAXFEATURES", "5000"}},
		{"1.0 GML2", Options{}, []string{"VERSION", "1.0.0", "TYPENAME", "gf:parcels", "MAXFEATURES", "900"}},
		{"desc", Options{}, []string{"VERSION", "2.0.0", "TYPENAMES", "gf:parcels", "COUNT", "1000", "SORTBY", "parcel_id DESC"}},
		{"mapserver", Options{Flavor: FlavorMapServer}, []string{"VERSION", "2.0.0", "TYPENAMES", "ms:parcels", "COUNT", "1000"}},
		{"qgis 1.0 startindex extension", Options{Flavor: FlavorQGIS}, []string{"VERSION", "1.0.0", "TYPENAME", "qgs:parcels", "MAXFEATURES", "800"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Features, tt.opts.UnstableOrder, tt.opts.ImplementsSorting = 2500, true, true
			_, ts := newTestServer(t, tt.opts)
			extra := append(tt.extra, "SORTBY", "parcel_id ASC")
			if slices.Contains(tt.extra, "SORTBY") {
				extra = tt.extra
			}
			for i, c := range harvest(t, ts, 2500, extra...) {
				if c != 1 {
					t.Fatalf("parcel %d delivered %d times", i, c)
				}
			}
		})
	}
}

func TestUnstableOrderLosesWithoutSortBy(t *testing.T) {
	const n = 20000
	tests := []struct {
		name             string
		opts             Options
		minLoss, maxLoss float64
	}{
		{"unstable", Options{UnstableOrder: true}, 0.008, 0.03},
		{"unstable but sorting ignored", Options{UnstableOrder: true, ImplementsSorting: false}, 0.008, 0.03},
		{"stable", Options{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Features = n
			s, ts := newTestServer(t, tt.opts)
			args := []string{"VERSION", "2.0.0", "TYPENAMES", "gf:parcels", "COUNT", "1000", "OUTPUTFORMAT", "application/json"}
			if tt.name == "unstable but sorting ignored" {
				args = append(args, "SORTBY", "parcel_id ASC")
			}
			seen := harvest(t, ts, n, args...)
			lost, dup := 0, 0
			for _, c := range seen {
				if c == 0 {
					lost++
				}
				if c > 1 {
					dup += c - 1
				}
			}
			loss := float64(lost) / n
			t.Logf("lost %d (%.2f%%), duplicated %d, served %d", lost, 100*loss, dup, s.Stats().FeaturesServed)
			if loss < tt.minLoss || loss > tt.maxLoss {
				t.Errorf("loss %.4f outside [%v, %v]", loss, tt.minLoss, tt.maxLoss)
			}
			if lost != dup {
				t.Errorf("every lost row should be replaced by a duplicate: lost %d, dup %d", lost, dup)
			}
		})
	}
}

func TestNextLinks(t *testing.T) {
	tests := []struct {
		name      string
		flavor    string
		args      []string
		wantNext  bool
		matched   string
		follow    bool
		hitsNext  bool
		skipMatch bool
	}{
		{"geoserver needs startindex", "", []string{"COUNT", "1000"}, false, "2500", false, false, false},
		{"geoserver with startindex", "", []string{"COUNT", "1000", "STARTINDEX", "0"}, true, "2500", true, false, false},
		{"geoserver skip numberMatched", "", []string{"COUNT", "1000", "STARTINDEX", "0"}, true, "unknown", true, false, true},
		{"deegree count only", FlavorDeegree, []string{"COUNT", "1000"}, true, "2500", true, true, false},
		{"mapserver unknown numberMatched", FlavorMapServer, []string{"COUNT", "1000"}, true, "unknown", true, false, false},
		{"geojson links", "", []string{"COUNT", "1000", "STARTINDEX", "0", "OUTPUTFORMAT", "application/json"}, true, "2500", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newTestServer(t, Options{Features: 2500, Flavor: tt.flavor, ImplementsSorting: true, SkipNumberMatched: tt.skipMatch})
			base := []string{"SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", s.TypeName(), "SORTBY", "parcel_id"}
			p := parsePage(t, get(t, ts, kvp(append(base, tt.args...)...)))
			if (p.next != "") != tt.wantNext || p.numberMatched != tt.matched {
				t.Fatalf("next %q numberMatched %q", p.next, p.numberMatched)
			}
			if tt.follow {
				seen := map[int]bool{}
				for {
					for _, i := range p.ids {
						seen[i] = true
					}
					if p.next == "" {
						break
					}
					resp, err := http.Get(p.next)
					if err != nil {
						t.Fatal(err)
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					p = parsePage(t, response{status: resp.StatusCode, body: body, err: err})
				}
				if len(seen) != 2500 {
					t.Errorf("following next saw %d", len(seen))
				}
			}
			h := parsePage(t, get(t, ts, kvp(append(base, "COUNT", "1000", "RESULTTYPE", "hits")...)))
			if h.numberMatched != "2500" || h.numberReturned != "0" || (h.next != "") != tt.hitsNext {
				t.Errorf("hits: %+v", h)
			}
		})
	}
}
