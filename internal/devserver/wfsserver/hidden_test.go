package wfsserver

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestHiddenListing: Changes.Hidden parcels are left out of every listing and its count
// from revision 1 on, yet answered by RESOURCEID and OGC API items/{id}; deleted parcels
// are answered by neither.
func TestHiddenListing(t *testing.T) {
	s, ts := newTestServer(t, Options{Features: 400, Seed: 3})
	if err := s.SetRevision(1, Changes{Deleted: 4, Hidden: 20}); err != nil {
		t.Fatal(err)
	}
	var hidden, deleted []int
	listed := map[int]bool{}
	p := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
		"OUTPUTFORMAT", "application/json", "COUNT", "1000")))
	for _, i := range p.ids {
		listed[i] = true
	}
	for i := range 400 {
		switch {
		case !s.Exists(i):
			deleted = append(deleted, i)
		case !listed[i]:
			hidden = append(hidden, i)
		}
	}
	if len(p.ids) != 376 || p.numberMatched != "376" || len(hidden) != 20 || len(deleted) != 4 {
		t.Fatalf("listing: %d features, numberMatched %s, %d hidden, %d deleted; want 376, 376, 20, 4", len(p.ids), p.numberMatched, len(hidden), len(deleted))
	}
	hits := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
		"RESULTTYPE", "hits", "BBOX", "-180,-90,180,90,urn:ogc:def:crs:EPSG::4326")))
	inBox := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
		"OUTPUTFORMAT", "application/json", "COUNT", "1000", "BBOX", "-90,-180,90,180,urn:ogc:def:crs:EPSG::4326")))
	if len(inBox.ids) != 376 {
		t.Errorf("listing by BBOX: %d features, want 376 (the hidden ones left out)", len(inBox.ids))
	}
	if hits.numberMatched != "376" {
		t.Errorf("hits over the world = %s, want 376 (lowered to match)", hits.numberMatched)
	}
	ids := func(is []int) string {
		var b []string
		for _, i := range is {
			b = append(b, "parcels."+strconv.Itoa(i))
		}
		return strings.Join(b, ",")
	}
	byID := parsePage(t, get(t, ts, kvp("SERVICE", "WFS", "VERSION", "2.0.0", "REQUEST", "GetFeature", "TYPENAMES", "gf:parcels",
		"OUTPUTFORMAT", "application/json", "RESOURCEID", ids(append(append([]int{}, hidden[:3]...), deleted...)))))
	if len(byID.ids) != 3 {
		t.Errorf("RESOURCEID of 3 hidden and 4 deleted parcels answered %v, want the 3 hidden ones", byID.ids)
	}
	for _, c := range []struct {
		name string
		i    int
		want int
	}{{"hidden", hidden[0], http.StatusOK}, {"deleted", deleted[0], http.StatusNotFound}, {"listed", p.ids[0], http.StatusOK}} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Get(ts.URL + "/ogcapi/collections/parcels/items/parcels." + strconv.Itoa(c.i) + "?f=json")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("items/parcels.%d: %d, want %d", c.i, resp.StatusCode, c.want)
			}
		})
	}
}
