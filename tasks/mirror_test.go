package tasks

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// TestDeletionGate: a mirror deletes nothing unless every unit is done, the server counted
// the area, the run saw at least that many distinct features and no later run supersedes
// it; each refusal says why, and says whether the run's keys can serve a replay.
func TestDeletionGate(t *testing.T) {
	area := orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}
	tests := []struct {
		name                        string
		left, expected, seen, later int64
		why                         string // "" goes on
		forget, incomplete          bool
		missing                     int64
	}{
		{name: "complete", expected: 5000, seen: 5000},
		{name: "more seen than counted: goes on", expected: 5000, seen: 5003},
		{name: "units left: for a replay", left: 3, expected: 5000, seen: 4000, why: "3 units of the task are not done"},
		{name: "units left win over a missing count", left: 1, expected: -1, why: "1 units of the task are not done"},
		{name: "no count", expected: -1, seen: 5000, why: "gave no count", forget: true},
		{name: "fewer seen than counted: incomplete", expected: 5000, seen: 4997, why: "counted 5000 features in the area but the run saw 4997 distinct (3 missing)",
			incomplete: true, missing: 3},
		{name: "a later run supersedes", expected: 5000, seen: 5000, later: 9, why: "run 9 of this task has run since", forget: true},
		{name: "empty area, counted empty", expected: 0, seen: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := deletionGate(tt.left, tt.expected, tt.seen, tt.later, area)
			if tt.why == "" {
				if g.why != "" || g.forget || g.incomplete != nil {
					t.Fatalf("gate %+v, want it open", g)
				}
				return
			}
			if !strings.Contains(g.why, tt.why) {
				t.Errorf("why = %q, want it to say %q", g.why, tt.why)
			}
			if g.forget != tt.forget {
				t.Errorf("forget = %v, want %v", g.forget, tt.forget)
			}
			if (g.incomplete != nil) != tt.incomplete {
				t.Fatalf("incomplete = %v, want %v", g.incomplete, tt.incomplete)
			}
			if g.incomplete != nil {
				var ie *IncompleteError
				if !errors.As(error(g.incomplete), &ie) || ie.Missing != tt.missing || ie.Where != "1,2,3,4" {
					t.Errorf("incomplete = %+v, want %d missing in 1,2,3,4", g.incomplete, tt.missing)
				}
			}
		})
	}
}

// TestChooseDeletions: rows the server answered absent for by id go at once; rows it was
// not asked about go only once absent from target.delete_after complete runs; all of
// them stop at the safety rail, unless --allow-mass-delete.
func TestChooseDeletions(t *testing.T) {
	rules := deletionRules{After: 2, Current: 1000, MaxFraction: 0.1, RunID: 7, Table: "parcels"}
	with := func(f func(*deletionRules)) deletionRules { r := rules; f(&r); return r }
	tests := []struct {
		name    string
		v       confirmation
		runs    map[string]int
		r       deletionRules
		del     []string
		waiting int
		mass    bool
		notes   []string
	}{
		{name: "nothing unseen", r: rules},
		{name: "confirmed gone by id: deleted at once", v: confirmation{gone: []string{"a", "b"}}, r: rules, del: []string{"a", "b"}},
		{name: "served by id: kept, noted", v: confirmation{kept: 3, written: store.Counts{Updated: 1}}, r: rules,
			notes: []string{"left out 3 features it still serves by id (kept, 1 changed)"}},
		{name: "not asked, absent once: waits", v: confirmation{unasked: []string{"c"}}, runs: map[string]int{"c": 1}, r: rules,
			waiting: 1, notes: []string{"1 absent features not asked for by id are kept until absent from 2 complete runs"}},
		{name: "not asked, absent from delete_after runs: deleted", v: confirmation{unasked: []string{"c", "d"}}, runs: map[string]int{"c": 2, "d": 1}, r: rules,
			del: []string{"c"}, waiting: 1},
		{name: "delete_after 1: a source that cannot be asked deletes on the first complete run", v: confirmation{unasked: []string{"c"}},
			runs: map[string]int{"c": 1}, r: with(func(r *deletionRules) { r.After = 1 }), del: []string{"c"}},
		{name: "past the rail: nothing deleted", v: confirmation{gone: manyKeys(101)}, r: rules, mass: true,
			notes: []string{"deletions stopped"}},
		{name: "at the rail: deleted", v: confirmation{gone: manyKeys(100)}, r: rules, del: manyKeys(100)},
		{name: "past the rail, allowed", v: confirmation{gone: manyKeys(101)}, r: with(func(r *deletionRules) { r.AllowMass = true }), del: manyKeys(101)},
		{name: "the rail counts waiting rows out", v: confirmation{gone: manyKeys(100), unasked: []string{"x"}}, runs: map[string]int{"x": 1}, r: rules,
			del: manyKeys(100), waiting: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := chooseDeletions(tt.v, tt.runs, tt.r)
			if !slices.Equal(d.del, tt.del) {
				t.Errorf("del = %v, want %v", d.del, tt.del)
			}
			if d.waiting != tt.waiting {
				t.Errorf("waiting = %d, want %d", d.waiting, tt.waiting)
			}
			if (d.mass != nil) != tt.mass {
				t.Fatalf("mass = %v, want %v", d.mass, tt.mass)
			}
			if d.mass != nil && (d.mass.Candidates != int64(len(tt.v.gone)) || d.mass.Current != 1000 || d.mass.RunID != 7) {
				t.Errorf("mass = %+v", d.mass)
			}
			note := strings.Join(d.notes, "; ")
			for _, n := range tt.notes {
				if !strings.Contains(note, n) {
					t.Errorf("notes %q, want one saying %q", note, n)
				}
			}
		})
	}
}

func manyKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "k" + strings.Repeat("x", i)
	}
	return out
}
