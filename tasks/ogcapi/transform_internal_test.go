package ogcapi

import (
	"net/url"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

// TestPushdown: transform.where is sent as CQL2 text, with the task's own filter, only to
// a server declaring both filter conformance classes.
func TestPushdown(t *testing.T) {
	props := []tasks.Property{{Name: "land_use", Type: store.TypeText}, {Name: "area_m2", Type: store.TypeDouble}}
	both := []string{confFilter, confCQL2Text}
	tests := []struct {
		name        string
		own, where  string
		conformance []string
		want        string // the filter parameter, "" for none
	}{
		{name: "where, both classes", where: "land_use = 'residential' AND area_m2 > 500", conformance: both,
			want: "(land_use = 'residential' AND area_m2 > 500)"},
		{name: "where and filter", own: "a = 1", where: "area_m2 > 500", conformance: both, want: "(a = 1) AND area_m2 > 500"},
		{name: "filter alone", own: "a = 1", conformance: both, want: "a = 1"},
		{name: "where, no cql2 text", where: "area_m2 > 500", conformance: []string{confFilter}},
		{name: "where, no classes", where: "area_m2 > 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := &Task{cfg: Config{Filter: tt.own, Transform: tasks.Transform{Where: tt.where}}}
			p := &prepared{items: "http://example.test/collections/c/items", conformance: tt.conformance}
			var err error
			if _, p.transform, err = task.cfg.Transform.Plan("c", props); err != nil {
				t.Fatal(err)
			}
			p.pushdown = task.pushdown(p)
			u, err := url.Parse(task.itemsURL(p, harvest.Query{Box: orb.Bound{Max: orb.Point{1, 1}}, Count: 10}))
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			if got := q.Get("filter"); got != tt.want {
				t.Errorf("filter = %q, want %q", got, tt.want)
			}
			if lang := q.Get("filter-lang"); (lang == "cql2-text") != (tt.want != "") {
				t.Errorf("filter-lang = %q with filter %q", lang, tt.want)
			}
		})
	}
}
