package wfsserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/clip"
)

var testChanges = Changes{Edited: 60, Deleted: 45, Added: 70}

// collect pages through the whole layer, sorted, as GeoJSON 2.0.
func collect(t *testing.T, ts *httptest.Server, extra ...string) (ids []int, matched string) {
	t.Helper()
	for start := 0; ; {
		args := append([]string{"SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
			"SORTBY", "parcel_id", "COUNT", "333", "STARTINDEX", strconv.Itoa(start)}, extra...)
		p := parsePage(t, get(t, ts, kvp(args...)))
		if start == 0 {
			matched = p.numberMatched
		}
		if len(p.ids) == 0 {
			return ids, matched
		}
		ids = append(ids, p.ids...)
		start += len(p.ids)
	}
}

func TestRevisionsDifferByAddedAndDeleted(t *testing.T) {
	const n = 2000
	s, ts := newTestServer(t, Options{Features: n, Seed: 9, Changes: testChanges, ImplementsSorting: true})
	var added, deleted, edited []int
	for i := range n {
		switch s.ChangeOf(i) {
		case ChangeAdded:
			added = append(added, i)
		case ChangeDeleted:
			deleted = append(deleted, i)
		case ChangeEdited:
			edited = append(edited, i)
		}
	}
	if len(added) != testChanges.Added || len(deleted) != testChanges.Deleted || len(edited) != testChanges.Edited {
		t.Fatalf("ChangeOf: %d added, %d deleted, %d edited; want %+v", len(added), len(deleted), len(edited), testChanges)
	}
	if added[0] != n-testChanges.Added {
		t.Errorf("first added parcel is %d, want %d", added[0], n-testChanges.Added)
	}
	// Deleted and edited parcels are spread over the extent, not bunched in a corner.
	for _, kind := range [][]int{deleted, edited} {
		rows, cols := map[int]bool{}, map[int]bool{}
		for _, i := range kind {
			rows[i/s.grid.cols] = true
			cols[i%s.grid.cols] = true
		}
		if len(rows) < s.grid.rows/2 || len(cols) < s.grid.cols/2 {
			t.Errorf("%d changed parcels in %d of %d rows and %d of %d columns: not spread", len(kind), len(rows), s.grid.rows, len(cols), s.grid.cols)
		}
	}

	for _, rev := range []int{0, 1, 2} {
		if err := s.SetRevision(rev, testChanges); err != nil {
			t.Fatal(err)
		}
		want := slices.Collect(s.Indexes())
		wantN := n - testChanges.Added
		if rev > 0 {
			wantN = n - testChanges.Deleted
		}
		if len(want) != wantN || s.Count() != wantN {
			t.Fatalf("revision %d: Indexes %d, Count %d, want %d", rev, len(want), s.Count(), wantN)
		}
		for _, i := range want {
			if !s.Exists(i) {
				t.Fatalf("revision %d: Indexes yields %d, Exists says no", rev, i)
			}
		}
		for _, extra := range [][]string{nil, {"OUTPUTFORMAT", "application/json"}, {"SORTBY", "parcel_id DESC"}} {
			got, matched := collect(t, ts, extra...)
			if strings.Contains(strings.Join(extra, " "), "DESC") {
				slices.Reverse(got)
			}
			if !slices.Equal(got, want) || matched != strconv.Itoa(wantN) {
				t.Fatalf("revision %d %v: served %d parcels (numberMatched %s), want %d", rev, extra, len(got), matched, wantN)
			}
		}
	}

	// Revision 0 and 1 differ by exactly the added and deleted parcels.
	if err := s.SetRevision(0, testChanges); err != nil {
		t.Fatal(err)
	}
	r0 := slices.Collect(s.Indexes())
	if err := s.SetRevision(1, testChanges); err != nil {
		t.Fatal(err)
	}
	r1 := slices.Collect(s.Indexes())
	gone := slices.DeleteFunc(slices.Clone(r0), func(i int) bool { _, ok := slices.BinarySearch(r1, i); return ok })
	came := slices.DeleteFunc(slices.Clone(r1), func(i int) bool { _, ok := slices.BinarySearch(r0, i); return ok })
	if !slices.Equal(gone, deleted) || !slices.Equal(came, added) {
		t.Errorf("revision 0 -> 1: %d gone, %d came; want the %d deleted and %d added", len(gone), len(came), len(deleted), len(added))
	}
}

func TestRevisionCountsMatchFeatures(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "small", opts: Options{Features: 300, Seed: 4, Changes: Changes{Edited: 50, Deleted: 40, Added: 30}}},
		{name: "2000", opts: Options{Features: 2000, Seed: 9, Changes: testChanges}},
		{name: "unstable", opts: Options{Features: 2000, Seed: 2, Changes: testChanges, UnstableOrder: true}},
		{name: "all deleted", opts: Options{Features: 200, Seed: 1, Changes: Changes{Deleted: 200}}},
		{name: "all added", opts: Options{Features: 200, Seed: 1, Changes: Changes{Added: 200}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CountDefault = 5000
			s, ts := newTestServer(t, tt.opts)
			rng := rand.New(rand.NewPCG(uint64(tt.opts.Seed), 7))
			for _, rev := range []int{0, 1, 3} {
				if err := s.SetRevision(rev, tt.opts.Changes); err != nil {
					t.Fatal(err)
				}
				for k := range 8 {
					w, h := rng.Float64()*0.06, rng.Float64()*0.06
					x, y := 11.44+rng.Float64()*0.1, 48.04+rng.Float64()*0.1
					b := orb.Bound{Min: orb.Point{x, y}, Max: orb.Point{x + w, y + h}}
					if k == 0 {
						b = orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
					}
					got := s.FeaturesIn(b)
					var brute []int
					for i := range s.Len() {
						if c := clip.Geometry(b, s.Feature(i).Geometry); s.Exists(i) && c != nil && len(flatten(c)) > 0 {
							brute = append(brute, i)
						}
					}
					if !slices.Equal(got, brute) {
						t.Fatalf("revision %d bbox %v: FeaturesIn %d parcels, brute force %d", rev, b, len(got), len(brute))
					}
					bbox := fmt.Sprintf("%v,%v,%v,%v", b.Min[0], b.Min[1], b.Max[0], b.Max[1])
					for _, v := range []string{"2.0.0", "1.1.0", "1.0.0"} {
						if v != "1.0.0" { // 1.0 has no hits
							hits := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", v, "REQUEST", "GetFeature", "TYPENAME", "gf:parcels",
								"RESULTTYPE", "hits", "BBOX", bbox+",EPSG:4326")))
							if n := cmpOr(hits.numberMatched, hits.numberReturned); n != strconv.Itoa(len(got)) {
								t.Fatalf("revision %d %s hits %s, FeaturesIn %d", rev, v, n, len(got))
							}
						}
						for _, format := range []string{"", "application/json"} {
							p := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", v, "REQUEST", "GetFeature", "TYPENAME", "gf:parcels",
								"BBOX", bbox+",EPSG:4326", "OUTPUTFORMAT", format)))
							slices.Sort(p.ids)
							if !slices.Equal(p.ids, got) {
								t.Fatalf("revision %d %s %q: GetFeature %d parcels, FeaturesIn %d", rev, v, format, len(p.ids), len(got))
							}
						}
					}
					items := getItems(t, ts, "bbox="+bbox+"&limit=5000")
					if items.NumberMatched != len(got) || len(items.Features) != len(got) {
						t.Fatalf("revision %d: items numberMatched %d, %d features; FeaturesIn %d", rev, items.NumberMatched, len(items.Features), len(got))
					}
				}
			}
		})
	}
}

type itemsPage struct {
	NumberMatched  int `json:"numberMatched"`
	NumberReturned int `json:"numberReturned"`
	Features       []struct {
		ID         string         `json:"id"`
		Properties map[string]any `json:"properties"`
	} `json:"features"`
}

func getItems(t *testing.T, ts *httptest.Server, query string) itemsPage {
	t.Helper()
	resp, err := http.Get(ts.URL + "/ogcapi/collections/parcels/items?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p itemsPage
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("items %s: status %d, %v", query, resp.StatusCode, err)
	}
	return p
}

func TestEditedParcelsKeepIDsAndChangePayload(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 2000, Seed: 9, Changes: testChanges})
	var edited []int
	for i := range s.Len() {
		if s.ChangeOf(i) == ChangeEdited {
			edited = append(edited, i)
		}
	}
	payload := func(rev int) []Feature {
		if err := s.SetRevision(rev, testChanges); err != nil {
			t.Fatal(err)
		}
		out := make([]Feature, s.Len())
		for i := range out {
			out[i] = s.Feature(i)
		}
		return out
	}
	r0, r1, r2 := payload(0), payload(1), payload(2)
	moved := 0
	for i := range r0 {
		a, b, c := r0[i], r1[i], r2[i]
		if a.ID != b.ID || a.Properties["parcel_id"] != b.Properties["parcel_id"] || a.Properties["cadastre_no"] != b.Properties["cadastre_no"] {
			t.Fatalf("parcel %d changed its ids: %s %v -> %s %v", i, a.ID, a.Properties["parcel_id"], b.ID, b.Properties["parcel_id"])
		}
		same01 := fmt.Sprint(a.Properties) == fmt.Sprint(b.Properties) && fmt.Sprint(a.Geometry) == fmt.Sprint(b.Geometry)
		same12 := fmt.Sprint(b.Properties) == fmt.Sprint(c.Properties)
		if s.ChangeOf(i) != ChangeEdited {
			if !same01 || !same12 {
				t.Fatalf("parcel %d (%s) changed between revisions", i, s.ChangeOf(i))
			}
			continue
		}
		if same01 || same12 || a.Properties["assessed_value"] == b.Properties["assessed_value"] || a.Properties["updated_at"] == b.Properties["updated_at"] {
			t.Fatalf("edited parcel %d: payload unchanged\nrev 0 %v\nrev 1 %v\nrev 2 %v", i, a.Properties, b.Properties, c.Properties)
		}
		if fmt.Sprint(a.Geometry) != fmt.Sprint(b.Geometry) {
			moved++
			if a.Properties["area_m2"] == b.Properties["area_m2"] {
				t.Errorf("edited parcel %d: geometry changed, area_m2 did not", i)
			}
			// The moved shape stays within its cell's reach, where tiling looks for it.
			row, col := i/s.grid.cols, i%s.grid.cols
			g := &s.grid
			reach := orb.Bound{
				Min: orb.Point{g.ext.Min[0] + (float64(col)-maxOverhang)*g.dx, g.ext.Min[1] + (float64(row)-maxOverhang)*g.dy},
				Max: orb.Point{g.ext.Min[0] + (float64(col)+1+maxOverhang)*g.dx, g.ext.Min[1] + (float64(row)+1+maxOverhang)*g.dy},
			}
			if gb := b.Geometry.Bound(); !reach.Contains(gb.Min) || !reach.Contains(gb.Max) {
				t.Errorf("edited parcel %d: bound %v leaves its cell's reach %v", i, gb, reach)
			}
		}
	}
	if want := (len(edited) + 1) / 2; moved != want {
		t.Errorf("%d edited parcels moved, want %d", moved, want)
	}

	// What is served is the revision's payload, under the same ids.
	if err := s.SetRevision(1, testChanges); err != nil {
		t.Fatal(err)
	}
	i := edited[slices.IndexFunc(edited, func(i int) bool { return !orb.Equal(r0[i].Geometry, r1[i].Geometry) })]
	for _, format := range []string{"", "application/json"} {
		r := get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
			"RESOURCEID", "parcels."+strconv.Itoa(i), "OUTPUTFORMAT", format, "SRSNAME", "EPSG:4326"))
		p := parsePage(t, r)
		body := string(r.body)
		if !slices.Equal(p.ids, []int{i}) || !strings.Contains(body, r1[i].Properties["assessed_value"].(string)) ||
			!strings.Contains(body, "2025-01-01T00:00:00Z") {
			t.Errorf("%q: parcel %d served as %.300s; want id %d with assessed_value %v", format, i, body, i, r1[i].Properties["assessed_value"])
		}
		if format != "" {
			var fc struct {
				Features []struct{ Geometry struct{ Coordinates any } }
			}
			var want any
			wb, _ := json.Marshal(r1[i].Geometry)
			if err := errors.Join(json.Unmarshal(r.body, &fc), json.Unmarshal(wb, &want)); err != nil || len(fc.Features) != 1 ||
				!reflect.DeepEqual(fc.Features[0].Geometry.Coordinates, want) || orb.Equal(r0[i].Geometry, r1[i].Geometry) {
				t.Errorf("parcel %d: served geometry is not its moved revision-1 geometry (%v)", i, err)
			}
		}
	}
	// A deleted parcel asked for by id is not there.
	d := slices.IndexFunc(r0, func(f Feature) bool { return s.ChangeOf(f.Index) == ChangeDeleted })
	p := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
		"RESOURCEID", "parcels."+strconv.Itoa(d)+",parcels."+strconv.Itoa(i))))
	if !slices.Equal(p.ids, []int{i}) || p.numberMatched != "1" {
		t.Errorf("deleted %d and edited %d asked for: served %v, numberMatched %s", d, i, p.ids, p.numberMatched)
	}
}

func TestEmptyAnswersNothing(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 500, Empty: true, CountExtra: 3})
	check := func(wantN int) {
		t.Helper()
		for _, v := range []string{"2.0.0", "1.1.0", "1.0.0"} {
			if v != "1.0.0" { // 1.0 has no hits
				hits := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", v, "REQUEST", "GetFeature", "TYPENAME", "gf:parcels", "RESULTTYPE", "hits")))
				if n := cmpOr(hits.numberMatched, hits.numberReturned); n != strconv.Itoa(wantN) {
					t.Errorf("%s hits %s, want %d", v, n, wantN)
				}
			}
			for _, format := range []string{"", "application/json"} {
				p := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", v, "REQUEST", "GetFeature", "TYPENAME", "gf:parcels",
					"OUTPUTFORMAT", format, "MAXFEATURES", "10")))
				if wantN == 0 && (len(p.ids) != 0 || p.numberReturned != "" && p.numberReturned != "0" || p.numberMatched != "" && p.numberMatched != "0") {
					t.Errorf("%s %q empty: %d features, numberMatched %q, numberReturned %q", v, format, len(p.ids), p.numberMatched, p.numberReturned)
				}
				if wantN > 0 && len(p.ids) != 10 {
					t.Errorf("%s %q: %d features, want 10", v, format, len(p.ids))
				}
			}
		}
		items := getItems(t, ts, "limit=10")
		if items.NumberMatched != wantN || len(items.Features) != min(wantN, 10) {
			t.Errorf("items: numberMatched %d, %d features; want %d", items.NumberMatched, len(items.Features), wantN)
		}
	}
	check(0)
	if r := get(t, ts, kvp("SERVICE", "WFS", "REQUEST", "GetCapabilities")); r.status != http.StatusOK || !strings.Contains(string(r.body), "parcels") {
		t.Errorf("capabilities in empty mode: %d", r.status)
	}
	if s.Count() != 500 || len(s.FeaturesIn(s.opts.Extent)) == 0 {
		t.Errorf("empty mode changed the ground truth: Count %d", s.Count())
	}
	s.SetEmpty(false)
	check(500 + 3)
}

func TestSetRevisionRefusesWhatTheParcelsCannotHold(t *testing.T) {
	s := New(Options{Features: 100})
	tests := []struct {
		name string
		rev  int
		c    Changes
		ok   bool
	}{
		{name: "all edited", rev: 1, c: Changes{Edited: 100}, ok: true},
		{name: "half added, half deleted", rev: 1, c: Changes{Added: 50, Deleted: 50}, ok: true},
		{name: "negative revision", rev: -1},
		{name: "negative count", rev: 1, c: Changes{Edited: -1}},
		{name: "too many added", rev: 1, c: Changes{Added: 101}},
		{name: "too many changed", rev: 1, c: Changes{Added: 50, Deleted: 30, Edited: 21}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.SetRevision(0, Changes{})
			err := s.SetRevision(tt.rev, tt.c)
			if (err == nil) != tt.ok {
				t.Fatalf("SetRevision(%d, %+v) = %v", tt.rev, tt.c, err)
			}
			if rev, c := s.Revision(); !tt.ok && (rev != 0 || c != Changes{}) {
				t.Errorf("a refused SetRevision changed the state to %d %+v", rev, c)
			}
		})
	}
}

// TestRevisionSwitchIsAtomicPerRequest switches revisions while full pages are read: each
// answer must count exactly the features it holds.
func TestRevisionSwitchIsAtomicPerRequest(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 1500, Changes: testChanges})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-done:
				return
			default:
			}
			_ = s.SetRevision(min(k%3, 1), testChanges)
			s.SetEmpty(k%3 == 2)
		}
	})
	for range 40 {
		p := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
			"OUTPUTFORMAT", "application/json", "COUNT", "1000", "BBOX", "11.45,48.05,11.5,48.15,EPSG:4326")))
		if p.numberMatched != strconv.Itoa(len(p.ids)) {
			t.Errorf("numberMatched %s, %d features", p.numberMatched, len(p.ids))
		}
	}
	close(done)
	wg.Wait()
}

func TestControlHandler(t *testing.T) {
	s := New(Options{Features: 100})
	ts := httptest.NewServer(ControlHandler(s))
	defer ts.Close()
	do := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, ts.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"state", "GET", "/_dev/state", 200, `{"added":0,"deleted":0,"edited":0,"empty":false,"hidden":0,"revision":0}`},
		{"revision with changes", "POST", "/_dev/revision?rev=1&edited=5&deleted=3&added=2", 200, `{"added":2,"deleted":3,"edited":5,"empty":false,"hidden":0,"revision":1}`},
		{"revision keeps counts", "POST", "/_dev/revision?rev=2", 200, `{"added":2,"deleted":3,"edited":5,"empty":false,"hidden":0,"revision":2}`},
		{"empty on", "POST", "/_dev/empty?on=1", 200, `{"added":2,"deleted":3,"edited":5,"empty":true,"hidden":0,"revision":2}`},
		{"empty off", "POST", "/_dev/empty?on=false", 200, `{"added":2,"deleted":3,"edited":5,"empty":false,"hidden":0,"revision":2}`},
		{"revision missing", "POST", "/_dev/revision?edited=1", 400, "rev is required"},
		{"too many", "POST", "/_dev/revision?rev=1&added=101", 400, "only 100"},
		{"not a number", "POST", "/_dev/revision?rev=x", 400, "integer"},
		{"bad on", "POST", "/_dev/empty?on=maybe", 400, "on must be"},
		{"GET a switch", "GET", "/_dev/revision?rev=1", 405, "takes POST"},
		{"unknown", "POST", "/_dev/reset", 404, "no such control"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(tt.method, tt.path)
			if status != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("%s %s: %d %s; want %d %s", tt.method, tt.path, status, body, tt.status, tt.body)
			}
		})
	}
	if s.Count() != 97 {
		t.Errorf("after the switches, Count %d, want 97", s.Count())
	}
}
