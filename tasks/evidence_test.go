package tasks_test

import (
	"errors"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/tasks"
)

// TestDecide: the one decision over a response's evidence. The rows named "hostile" are the
// servers that made geoflow lose data with exit 0 or run without end while it took their
// claims as evidence; each now ends in a verdict that neither writes a shortfall off
// unproven nor asks for more without end.
func TestDecide(t *testing.T) {
	tile := func(size, counted int64) tasks.Evidence {
		return tasks.Evidence{Kind: tasks.AskTile, Size: size, Counted: counted, Matched: -1, CountsInResponse: true, Pages: true}
	}
	with := func(e tasks.Evidence, f func(*tasks.Evidence)) tasks.Evidence { f(&e); return e }
	tests := []struct {
		name    string
		e       tasks.Evidence
		want    tasks.VerdictKind
		missing int64
		// writtenOff says the verdict must name the observation that proved a claim wrong.
		writtenOff  bool
		start, size int64
	}{
		// Tiles.
		{name: "every feature counted came", e: with(tile(1000, 700), func(e *tasks.Evidence) { e.Returned, e.Matched = 700, 700 }), want: tasks.Complete},
		{name: "empty tile", e: with(tile(1000, 0), func(e *tasks.Evidence) { e.Matched = 0 }), want: tasks.Complete},
		{name: "full response without a count: split", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned = 1000 }), want: tasks.Split},
		{name: "full response, counted at what came: ask once for the rest", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned, e.Matched = 1000, 1000 }),
			want: tasks.PageOn, start: 1000, size: 1000},
		{name: "full response, counted at what came, server cannot page: as counted", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned, e.Matched, e.Pages = 1000, 1000, false }),
			want: tasks.Complete},
		{name: "count above one response: split", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned, e.Matched = 0, 5000 }), want: tasks.Split},
		{name: "short of the count, not full: ask for the rest", e: with(tile(1000, 800), func(e *tasks.Evidence) { e.Returned, e.Matched = 600, 800 }),
			want: tasks.PageOn, start: 600, size: 400},
		{name: "counted, none came", e: with(tile(1000, 50), func(e *tasks.Evidence) { e.Returned, e.Matched = 0, 50 }), want: tasks.Incomplete, missing: 50},
		{name: "short, server cannot page: smaller tiles", e: with(tile(1000, 800), func(e *tasks.Evidence) { e.Returned, e.Matched, e.Pages = 600, 800, false }), want: tasks.Split},
		{name: "WFS 1.x numberOfFeatures of the response only", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned, e.Matched, e.CountsInResponse = 300, 300, false }),
			want: tasks.Complete},
		{name: "short response with a next link, no count: capped page", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned, e.Next, e.NextTrusted = 250, true, true }),
			want: tasks.Split},
		{name: "next link on a last page, already taken once: not evidence", e: with(tile(1000, -1), func(e *tasks.Evidence) { e.Returned, e.Next = 250, true }),
			want: tasks.Complete},
		{name: "count disowned by the container: written off, named", e: with(tile(1000, 900), func(e *tasks.Evidence) { e.Returned, e.Matched, e.CountDisowned = 400, 900, true }),
			want: tasks.Complete, missing: 500, writtenOff: true},

		// Pages of a tile that cannot be split, and the rest of a short tile.
		{name: "full page", e: tasks.Evidence{Kind: tasks.AskPage, Start: 1000, Size: 1000, Total: 5000, Returned: 1000}, want: tasks.Complete},
		{name: "last page", e: tasks.Evidence{Kind: tasks.AskPage, Start: 4000, Size: 1000, Total: 4500, Returned: 500}, want: tasks.Complete},
		{name: "capped page: the rest is another page", e: tasks.Evidence{Kind: tasks.AskPage, Start: 0, Size: 1000, Total: 5000, Returned: 400},
			want: tasks.PageOn, start: 400, size: 600},
		{name: "page counted, none came", e: tasks.Evidence{Kind: tasks.AskPage, Start: 2000, Size: 1000, Total: 5000}, want: tasks.Incomplete, missing: 1000},
		{name: "rest of a full tile past its count: empty, complete", e: tasks.Evidence{Kind: tasks.AskProbe, Start: 1000, Size: 1000, Total: 1000},
			want: tasks.Complete},
		{name: "rest of a full tile past its count: another full page, counted too few", e: tasks.Evidence{Kind: tasks.AskProbe, Start: 1000, Size: 1000, Total: 1000, Returned: 1000},
			want: tasks.Incomplete, missing: -1},
		{name: "rest of a short tile holds features: a capped page, finished", e: tasks.Evidence{Kind: tasks.AskProbe, Start: 120, Size: 180, Total: 125, Returned: 5},
			want: tasks.Complete},

		// Batches asked for by id.
		{name: "batch answered", e: tasks.Evidence{Kind: tasks.AskBatch, Size: 200, Answered: 200, Returned: 200}, want: tasks.Complete},
		{name: "batch held back in part: ask for the rest", e: tasks.Evidence{Kind: tasks.AskBatch, Size: 200, Answered: 150, Returned: 150},
			want: tasks.PageOn, start: 150, size: 50},
		{name: "ids asked for by id and not answered: absence observed", e: tasks.Evidence{Kind: tasks.AskBatch, Size: 12},
			want: tasks.Complete, missing: 12, writtenOff: true},

		// Listings of ids.
		{name: "listing whole", e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 3000}, want: tasks.Complete},
		{name: "listing cut short: smaller tiles", e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 500, Exceeded: true}, want: tasks.Split},
		{name: "listing flagged with no ids: nothing was cut", e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Exceeded: true}, want: tasks.Complete},

		// The hostile servers.
		{name: "hostile: 3 features silently left out of pages, counts right: the rest asked for, none came",
			e: tasks.Evidence{Kind: tasks.AskProbe, Start: 799, Size: 201, Total: 800}, want: tasks.Incomplete, missing: 1},
		{name: "hostile: numberMatched 10^12 on every answer: split (the task's budget ends it)",
			e: with(tile(1000, 1_000_000_000_000), func(e *tasks.Evidence) { e.Matched = 1_000_000_000_000 }), want: tasks.Split},
		{name: "hostile: 10^12 in a tile whose container counted less: a short page is written off, named",
			e: tasks.Evidence{Kind: tasks.AskPage, Start: 0, Size: 1000, Total: 1_000_000_000_000, CountDisowned: true}, want: tasks.Complete, missing: 1000, writtenOff: true},
		{name: "hostile: the same 500 ids on every page whatever the box (lon/lat): features outside the box",
			e: with(tile(500, -1), func(e *tasks.Evidence) { e.Returned, e.Outside, e.Next, e.NextTrusted = 500, 470, true, true }), want: tasks.Incomplete, missing: -1},
		{name: "hostile: the same 500 ids on every page (projected CRS): the parent's very response",
			e: with(tile(500, -1), func(e *tasks.Evidence) { e.Returned, e.Print, e.ParentPrint = 500, 0xbeef, 0xbeef }), want: tasks.Incomplete, missing: -1},
		{name: "hostile: ArcGIS exceededTransferLimit forever, below the cap the server showed",
			e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 120, Exceeded: true, ParentCap: 500}, want: tasks.Complete},
		{name: "hostile: ArcGIS exceededTransferLimit forever on the same listing",
			e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 500, Exceeded: true, ParentCap: 500, Print: 7, ParentPrint: 7}, want: tasks.Incomplete, missing: -1},
		{name: "hostile: ArcGIS 5,000,000 ids listed: more than one listing may hold",
			e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 1_000_001}, want: tasks.Split},
		{name: "hostile: ArcGIS 5,000,000 ids listed, a sample asked for by id mostly not answered",
			e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 1_000_001, Sampled: 100, SampleAnswered: 1}, want: tasks.Incomplete, missing: -1},
		{name: "a long listing whose sample is answered: smaller tiles",
			e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 1_000_001, Sampled: 100, SampleAnswered: 100}, want: tasks.Split},
		{name: "hostile: ArcGIS 5,000,000 ids listed in every tile",
			e: tasks.Evidence{Kind: tasks.AskList, Size: 1_000_000, Returned: 1_000_001, Print: 9, ParentPrint: 9}, want: tasks.Incomplete, missing: -1},
		{name: "hostile: ArcGIS ids listed that do not exist, asked for by id",
			e: tasks.Evidence{Kind: tasks.AskBatch, Size: 1000}, want: tasks.Complete, missing: 1000, writtenOff: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tasks.Decide(tt.e)
			if v.Kind != tt.want {
				t.Fatalf("verdict %s (%s), want %s", v.Kind, v.Reason, tt.want)
			}
			if (tt.want == tasks.Incomplete || tt.missing != 0) && v.Missing != tt.missing {
				t.Errorf("missing %d, want %d (%s)", v.Missing, tt.missing, v.Reason)
			}
			if tt.want == tasks.PageOn && (v.Start != tt.start || v.Size != tt.size) {
				t.Errorf("rest from %d, %d features; want from %d, %d", v.Start, v.Size, tt.start, tt.size)
			}
			if (v.WrittenOff != "") != tt.writtenOff {
				t.Errorf("written off %q; want an observation named: %v", v.WrittenOff, tt.writtenOff)
			}
			if tt.want != tasks.Complete && v.Reason == "" {
				t.Error("the verdict gives no reason")
			}
			err := v.Err("q")
			var inc *tasks.IncompleteError
			if (tt.want == tasks.Incomplete) != errors.As(err, &inc) {
				t.Errorf("Err = %v", err)
			}
			if inc != nil && inc.FailureClass() != dlq.ClassIncomplete {
				t.Errorf("class %s", inc.FailureClass())
			}
		})
	}
}

// TestDecideNeverLoops: whatever a server answers, the verdicts that ask again ask for
// strictly less, or cut the box (which the task's budget bounds): no verdict asks for the
// same thing again.
func TestDecideNeverLoops(t *testing.T) {
	for returned := int64(0); returned <= 12; returned++ {
		for _, kind := range []tasks.AskKind{tasks.AskPage, tasks.AskProbe, tasks.AskBatch} {
			e := tasks.Evidence{Kind: kind, Start: 3, Size: 10, Total: 40, Returned: returned, Answered: min(returned, 10)}
			v := tasks.Decide(e)
			if v.Kind == tasks.Split {
				t.Errorf("%v with %d back: a page cannot be split", kind, returned)
			}
			if v.Kind == tasks.PageOn && v.Size >= e.Size {
				t.Errorf("%v with %d back: asks for %d again of %d", kind, returned, v.Size, e.Size)
			}
		}
	}
}
