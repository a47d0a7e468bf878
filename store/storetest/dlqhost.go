package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// testDeadLetterHost: Filter.Host selects the entries whose request went to a host[:port]
// (without credentials, in any case), or with NoHost those that made none, in
// ListDeadLetters and DeadLetterStats alike; every host DeadLetterStats names selects
// exactly the entries it counted, so a filter can be built from the stats.
func testDeadLetterHost(t *testing.T, s store.Store) {
	ctx := t.Context()
	run := startRun(t, s, store.RunStart{Flow: "parcels"})
	addUnits(t, s, run.ID, "wfs", 6)
	other := startRun(t, s, store.RunStart{Flow: "roads"})
	addUnits(t, s, other.ID, "tiles", 1)
	ids := map[string]int64{
		"a0": recordDead(t, s, "parcels", run.ID, "wfs", 0, dlq.ClassHTTP5xx, "https://A.Example/wfs?x=1"),
		"a1": recordDead(t, s, "parcels", run.ID, "wfs", 1, dlq.ClassHTTP5xx, "https://user:pw@a.example/wfs"),
		"p2": recordDead(t, s, "parcels", run.ID, "wfs", 2, dlq.ClassTimeout, "http://a.example:8080/x"),
		"b3": recordDead(t, s, "parcels", run.ID, "wfs", 3, dlq.ClassParse, "https://b.example/t"),
		"n4": recordDead(t, s, "parcels", run.ID, "wfs", 4, dlq.ClassDatabase, ""),
		"n5": recordDead(t, s, "parcels", run.ID, "wfs", 5, dlq.ClassDatabase, ""),
		"c0": recordDead(t, s, "roads", other.ID, "tiles", 0, dlq.ClassHTTP4xx, "https://c.example/0/0/0.png"),
	}
	if _, err := s.DiscardDeadLetters(ctx, []int64{ids["n5"]}); err != nil {
		t.Fatal(err)
	}
	name := map[int64]string{}
	for k, id := range ids {
		name[id] = k
	}
	parsed, err := dlq.FilterArgs{Host: " A.Example "}.Parse(time.Now())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		f    dlq.Filter
		want []string
	}{
		{name: "host", f: dlq.Filter{Host: "a.example"}, want: []string{"a0", "a1"}},
		{name: "host in another case", f: dlq.Filter{Host: "A.EXAMPLE"}, want: []string{"a0", "a1"}},
		{name: "host as parsed", f: parsed, want: []string{"a0", "a1"}},
		{name: "host and port", f: dlq.Filter{Host: "a.example:8080"}, want: []string{"p2"}},
		{name: "no host", f: dlq.Filter{Host: dlq.NoHost}, want: []string{"n4", "n5"}},
		{name: "no host, open", f: dlq.Filter{Host: dlq.NoHost, Status: dlq.StatusOpen}, want: []string{"n4"}},
		{name: "host of another run", f: dlq.Filter{Host: "c.example", RunID: run.ID}, want: nil},
		{name: "host and ids", f: dlq.Filter{Host: "b.example", IDs: []int64{ids["a0"], ids["b3"]}}, want: []string{"b3"}},
		{name: "host and class", f: dlq.Filter{Host: "a.example", Class: dlq.ClassTimeout}, want: nil},
		{name: "unknown host", f: dlq.Filter{Host: "nowhere.example"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := s.ListDeadLetters(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range es {
				names = append(names, name[e.ID])
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("ListDeadLetters(%+v) = %v, want %v", tt.f, names, tt.want)
			}
			rows, err := s.DeadLetterStats(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := dlq.Aggregate(rows).Total; got != int64(len(tt.want)) {
				t.Errorf("DeadLetterStats(%+v) counts %d entries, want %d: %+v", tt.f, got, len(tt.want), rows)
			}
		})
	}

	rows, err := s.DeadLetterStats(ctx, dlq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	byHost := dlq.Aggregate(rows).ByHost
	var hosts []string
	for _, c := range byHost {
		hosts = append(hosts, c.Key)
	}
	slices.Sort(hosts)
	if want := []string{dlq.NoHost, "a.example", "a.example:8080", "b.example", "c.example"}; !slices.Equal(hosts, want) {
		t.Errorf("stats by host %q, want %q (lower-cased, without credentials)", hosts, want)
	}
	for _, c := range byHost {
		es, err := s.ListDeadLetters(ctx, dlq.Filter{Host: c.Key})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(es)) != c.N {
			t.Errorf("host %q: stats count %d entries, the filter lists %v", c.Key, c.N, entryIDs(es))
		}
	}
}
