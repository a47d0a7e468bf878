package arcgisserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

var changes = wfsserver.Changes{Edited: 30, Deleted: 20, Added: 25}

// answer is the union of the query answers the tests read.
type answer struct {
	Count     *int  `json:"count"`
	ObjectIDs []int `json:"objectIds"`
	Features  []struct {
		Attributes map[string]any `json:"attributes"`
	} `json:"features"`
	Error *struct{ Code int } `json:"error"`
}

func query(t *testing.T, ts *httptest.Server, params ...string) answer {
	t.Helper()
	v := url.Values{"f": {"json"}, "where": {"1=1"}}
	for k := 0; k+1 < len(params); k += 2 {
		v.Set(params[k], params[k+1])
	}
	resp, err := http.Get(ts.URL + "/arcgis/rest/services/Parcels/FeatureServer/0/query?" + v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.Error != nil {
		t.Fatalf("query %v: %v, error %v", v, err, a.Error)
	}
	return a
}

func (a answer) ids() []int {
	var out []int
	for _, f := range a.Features {
		out = append(out, int(f.Attributes["OBJECTID"].(float64)))
	}
	return out
}

func TestQueriesFollowTheRevision(t *testing.T) {
	s := New(Options{Features: 600, Seed: 3, MaxRecordCount: 5000, Changes: changes})
	ts := httptest.NewServer(s)
	defer ts.Close()
	envelopes := []string{"", "11.45,48.05,11.55,48.15", "11.47,48.06,11.5,48.1", `{"xmin":11.5,"ymin":48.1,"xmax":11.52,"ymax":48.13}`}
	served := map[int][]int{}
	for _, rev := range []int{0, 1} {
		if err := s.SetRevision(rev, changes); err != nil {
			t.Fatal(err)
		}
		want := 600 - changes.Added
		if rev > 0 {
			want = 600 - changes.Deleted
		}
		if s.Count() != want || len(s.ObjectIDs()) != want {
			t.Fatalf("revision %d: Count %d, %d object ids; want %d", rev, s.Count(), len(s.ObjectIDs()), want)
		}
		served[rev] = s.ObjectIDs()
		for _, env := range envelopes {
			ids := query(t, ts, "returnIdsOnly", "true", "geometry", env).ObjectIDs
			count := *query(t, ts, "returnCountOnly", "true", "geometry", env).Count
			features := query(t, ts, "outFields", "*", "geometry", env, "returnGeometry", "false").ids()
			if env == "" && !slices.Equal(ids, served[rev]) {
				t.Errorf("revision %d: returnIdsOnly gives %d ids, ObjectIDs %d", rev, len(ids), len(served[rev]))
			}
			if count != len(ids) || !slices.Equal(features, ids) {
				t.Errorf("revision %d envelope %q: count %d, %d ids, %d features", rev, env, count, len(ids), len(features))
			}
			for _, id := range ids {
				if !s.Exists(id) {
					t.Fatalf("revision %d: object id %d listed but does not exist", rev, id)
				}
			}
		}
	}
	var gone, came []int
	for id := 1; id <= 600; id++ {
		in0, in1 := slices.Contains(served[0], id), slices.Contains(served[1], id)
		switch {
		case in0 && !in1:
			gone = append(gone, id)
		case in1 && !in0:
			came = append(came, id)
		}
	}
	if len(gone) != changes.Deleted || len(came) != changes.Added {
		t.Errorf("revision 0 -> 1: %d gone, %d came; want %d and %d", len(gone), len(came), changes.Deleted, changes.Added)
	}

	// Asked for by id, a deleted parcel is not there and an edited one has its new values.
	var edited int
	for i := range 600 {
		if s.parcels.ChangeOf(i) == wfsserver.ChangeEdited {
			edited = i + 1
			break
		}
	}
	got := map[int]answer{}
	for _, rev := range []int{0, 1} {
		if err := s.SetRevision(rev, changes); err != nil {
			t.Fatal(err)
		}
		got[rev] = query(t, ts, "objectIds", strconv.Itoa(gone[0])+","+strconv.Itoa(edited), "outFields", "*")
	}
	if ids := got[1].ids(); !slices.Equal(ids, []int{edited}) {
		t.Errorf("revision 1, objectIds %d,%d: features %v, want only %d", gone[0], edited, ids, edited)
	}
	attrs := func(a answer, id int) map[string]any {
		k := slices.Index(a.ids(), id)
		if k < 0 {
			t.Fatalf("object %d not served", id)
		}
		return a.Features[k].Attributes
	}
	if len(got[0].Features) != 2 {
		t.Errorf("revision 0, objectIds %d,%d: %d features, want 2", gone[0], edited, len(got[0].Features))
	}
	a0, a1 := attrs(got[0], edited), attrs(got[1], edited)
	if a0["OBJECTID"] != a1["OBJECTID"] || a0["parcel_id"] != a1["parcel_id"] || a0["assessed_value"] == a1["assessed_value"] || a0["updated_at"] == a1["updated_at"] {
		t.Errorf("edited object %d: revision 0 %v, revision 1 %v", edited, a0, a1)
	}
}

func TestEmptyLayerAnswersNothing(t *testing.T) {
	s := New(Options{Features: 100, Empty: true})
	ts := httptest.NewServer(s)
	defer ts.Close()
	if n := *query(t, ts, "returnCountOnly", "true").Count; n != 0 {
		t.Errorf("count %d, want 0", n)
	}
	if a := query(t, ts, "returnIdsOnly", "true"); a.ObjectIDs == nil || len(a.ObjectIDs) != 0 {
		t.Errorf("ids %v, want []", a.ObjectIDs)
	}
	if a := query(t, ts, "outFields", "*", "objectIds", "1,2,3"); len(a.Features) != 0 {
		t.Errorf("%d features, want none", len(a.Features))
	}
	s.SetEmpty(false)
	if n := *query(t, ts, "returnCountOnly", "true").Count; n != 100 {
		t.Errorf("count %d after SetEmpty(false), want 100", n)
	}
	if err := s.SetRevision(1, wfsserver.Changes{Deleted: 101}); err == nil {
		t.Error("SetRevision accepted 101 deletions of 100 parcels")
	}
}
