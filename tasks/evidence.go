package tasks

import (
	"fmt"

	"github.com/geoflow/geoflow/dlq"
)

// IncompleteError says that the evidence of a harvest does not add up: the server
// counted or listed features that were neither returned nor shown not to exist. It is
// a unit's dead letter (what came is stored; a replay asks again) and, returned by a
// Finisher, makes the task end store.Incomplete and the run exit 3.
type IncompleteError struct {
	// Where is the unit (tile, page, batch) or the area the shortfall is in.
	Where string
	// Missing is how many features are unaccounted for; -1 when unknown.
	Missing int64
	// Reason is the evidence, in words: what was claimed and what was observed.
	Reason string
}

func (e *IncompleteError) Error() string {
	if e.Missing >= 0 {
		return fmt.Sprintf("incomplete: %d features missing in %s: %s", e.Missing, e.Where, e.Reason)
	}
	return fmt.Sprintf("incomplete: %s: %s", e.Where, e.Reason)
}

// FailureClass implements dlq.Classed.
func (e *IncompleteError) FailureClass() dlq.Class { return dlq.ClassIncomplete }

// BudgetError is a task that crossed one of geoflow's own limits (units planned, pages of
// a tile, ids listed, split depth): the server's answers would have had it go on without
// end. It fails the task, naming the key that raises the limit.
type BudgetError struct {
	Key   string // the flow key that sets the limit: "limits.max_units"
	Limit int64
	What  string // what crossed it, in words
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: past this task's limit of %d (raise %s if the data really is this large)", e.What, e.Limit, e.Key)
}

// FailureClass implements dlq.Classed: the same requests would cross it again.
func (e *BudgetError) FailureClass() dlq.Class { return dlq.ClassBudget }

// Evidence is the ledger of one response of a harvest (a tile, a page of a tile, a batch
// of ids): what was asked, what the server had claimed before the body was read, and,
// once the runner has written the features, what the body said and held. Decide turns it
// into a Verdict. It is plain data: the task fills in the ask and the claims, the
// response's stream the observations.
type Evidence struct {
	// What was asked.
	Kind  AskKind
	Start int64 // a page's offset within its tile
	Size  int64 // the features (or ids, for a batch) asked for
	// Total is the tile's count a page was planned from; 0 for a tile.
	Total int64
	// Counted is the server's count for the tile before it was fetched (a hits request,
	// or the area's count for the root), -1 when it gave none or the tile was fetched on
	// an estimate.
	Counted int64
	// CountsInResponse says a response's numberMatched counts the whole query (WFS 2.0,
	// OGC API), not just what the response holds (WFS 1.x numberOfFeatures).
	CountsInResponse bool
	// Pages says the server can be asked for the rest of a tile (an offset).
	Pages bool
	// ParentPrint is the fingerprint of the full response of the tile this one was split
	// from; 0 when none was taken.
	ParentPrint uint64
	// CountDisowned says an observation already proved this tile's count wrong: the
	// server counted more features in it than in the tile that contains it.
	CountDisowned bool
	// NextTrusted says a next link on a short response without a count may be taken as
	// a page the server caps (once per task: some servers put one on every last page).
	NextTrusted bool
	// Estimated says the tile was fetched on an estimate of its count (its share of its
	// parent's), without asking the server first: Counted is then -1.
	Estimated bool

	// What the response said and held.
	Returned int64  // features read, refused ones included
	Matched  int64  // the response's numberMatched; -1 when it gave none
	Next     bool   // the response had a next link
	Print    uint64 // an order-free fingerprint of the ids returned; 0 when none had an id
	// Outside is how many features returned lie wholly outside the box asked for (told
	// only where coordinates are lon/lat): a server ignoring the box.
	Outside int64
	// Answered is, for a batch, how many of the ids asked for came back, and
	// Unanswered the ids that did not.
	Answered   int64
	Unanswered []string
	// Exceeded is a listing's transfer-limit flag (ArcGIS exceededTransferLimit), and
	// ParentCap the length of the flagged listing of the tile this one was cut from: the
	// cap the server showed.
	Exceeded  bool
	ParentCap int64
	// Filtered is how many features returned the task's transform.where left out and
	// this unit counts (store.Counts.Filtered): observed, not stored. Decide does not
	// weigh them: they were returned.
	Filtered int64
	// Sampled is how many of a listing's ids were asked for by id to check it, and
	// SampleAnswered how many of them the server answered.
	Sampled, SampleAnswered int64
}

// AskKind is what a response was asked for.
type AskKind int

// The kinds of ask.
const (
	// AskTile is a tile's first response: all its features, at most Size.
	AskTile AskKind = iota
	// AskPage is a page of a tile that cannot be split: Size features from Start.
	AskPage
	// AskProbe is a page asking for the rest of a tile whose response came back short of
	// the server's count without being full.
	AskProbe
	// AskBatch is a batch of Size features asked for by id.
	AskBatch
	// AskList is a listing of the ids of a tile's features, of at most Size ids.
	AskList
)

// VerdictKind is what Decide concluded.
type VerdictKind int

// The verdicts.
const (
	// Complete: the response holds what it should; commit it.
	Complete VerdictKind = iota
	// Split: the tile holds more than one response; discard what came and cut the tile
	// into smaller ones (or pages, where it cannot be cut).
	Split
	// PageOn: keep what came and ask for the rest, from Start, Size features (ids, for
	// a batch).
	PageOn
	// Incomplete: keep what came; Missing features are unaccounted for, and nothing
	// observed proves the server's claim wrong. The unit becomes a dead letter of class
	// incomplete.
	Incomplete
)

func (k VerdictKind) String() string {
	return [...]string{"complete", "split", "page on", "incomplete"}[k]
}

// Verdict is Decide's judgement of one response.
type Verdict struct {
	Kind VerdictKind
	// Count is, for Split, the tile's count as best known; 0 when unknown.
	Count int64
	// Start and Size are, for PageOn, the rest to ask for.
	Start, Size int64
	// Missing is, for Incomplete, the features unaccounted for; for Complete, the
	// features the server claimed beyond what it returned where an observation proved
	// the claim wrong (written off, with WrittenOff saying which observation).
	Missing int64
	// CappedAt is a page size the response showed the server caps its pages at (a
	// short response with a next link, or the rest of a short tile holding features);
	// 0 when none was learnt.
	CappedAt int64
	// Reason says what the evidence was, in words, for the log and the dead letter.
	Reason string
	// WrittenOff names the observation that proved a claim wrong, when Complete wrote a
	// shortfall off.
	WrittenOff string
}

// Err is the dead letter of an Incomplete verdict; nil for the others.
func (v Verdict) Err(where string) error {
	if v.Kind != Incomplete {
		return nil
	}
	return &IncompleteError{Where: where, Missing: v.Missing, Reason: v.Reason}
}

// Decide judges one response from its evidence alone. It never takes a server's claim of
// more features (a count, a next link) as reason to go on without end, and never writes a
// shortfall off unless an observation proves the claim wrong: otherwise the response is
// Incomplete.
func Decide(e Evidence) Verdict {
	switch e.Kind {
	case AskBatch:
		return decideBatch(e)
	case AskList:
		return decideList(e)
	case AskPage, AskProbe:
		return decidePage(e)
	}
	return decideTile(e)
}

// decideBatch judges a batch of ids asked for by id.
func decideBatch(e Evidence) Verdict {
	switch rest := e.Size - e.Answered; {
	case rest <= 0:
		return Verdict{Kind: Complete}
	case e.Answered > 0:
		// The server held part of the batch back (its own cap, below what it
		// advertises): ask for the rest, a strictly smaller batch.
		return Verdict{Kind: PageOn, Start: e.Answered, Size: rest, CappedAt: e.Answered,
			Reason: fmt.Sprintf("%d of %d ids answered; asking for the rest", e.Answered, e.Size)}
	default:
		// Asked for by id, none came: the only evidence of absence there is.
		return Verdict{Kind: Complete, Missing: rest, WrittenOff: "asked for by id, the server answered none of them",
			Reason: fmt.Sprintf("%d ids listed but not answered when asked for by id (deleted since the listing)", rest)}
	}
}

// decideList judges a listing of a tile's ids: Complete plans batches of them, Split cuts
// the tile (the listing was cut short, or holds more ids than one listing may).
func decideList(e Evidence) Verdict {
	over := e.Returned > e.Size
	switch {
	case !over && (!e.Exceeded || e.Returned == 0):
		return Verdict{Kind: Complete}
	case e.ParentPrint != 0 && e.Print == e.ParentPrint:
		return Verdict{Kind: Incomplete, Missing: -1,
			Reason: "the tile's id listing is the very listing of the tile it was cut from: the server ignores the box, so smaller tiles cannot find the rest"}
	case e.Sampled > 0 && 2*e.SampleAnswered < e.Sampled:
		// Most of the ids it names do not exist when asked for by id: the listing is
		// no evidence of what smaller tiles would hold.
		return Verdict{Kind: Incomplete, Missing: -1,
			Reason: fmt.Sprintf("the listing names more than %d ids, but asked for %d of them by id the server answered %d", e.Size, e.Sampled, e.SampleAnswered)}
	case !over && e.ParentCap > 0 && e.Returned < e.ParentCap:
		// The server showed it cuts listings at ParentCap ids: one flagged with fewer
		// was not cut.
		return Verdict{Kind: Complete, Reason: fmt.Sprintf("a listing of %d ids flagged as cut short, below the %d the server cuts its listings at: the flag is not evidence", e.Returned, e.ParentCap)}
	case over:
		return Verdict{Kind: Split, Reason: fmt.Sprintf("the listing holds more than %d ids", e.Size)}
	}
	return Verdict{Kind: Split, Reason: fmt.Sprintf("the server flagged its listing of %d ids as cut short", e.Returned)}
}

// decideTile judges a tile's first response. It asks how many features the tile is
// known to hold (tileCount), whether the response is full, and whether the server
// ignores the box (ignoresBox), and from those whether the tile is complete, must be
// split, paged on, or cannot be completed.
func decideTile(e Evidence) Verdict {
	got := e.Returned
	matched := tileCount(e)
	full := e.Size > 0 && got >= e.Size
	sameAsParent := ignoresBox(e)
	switch {
	case full && matched == got && e.CountsInResponse && !sameAsParent:
		// A full response, and the server counts no more. Smaller tiles would find the
		// same features again (they may all lie where the tile would be cut), so the
		// rest of this one is asked for once where the server pages, and an empty answer
		// shows the tile complete. Where it cannot be asked, the count is taken as for
		// any response that holds all it counted.
		if !e.Pages {
			return Verdict{Kind: Complete}
		}
		return Verdict{Kind: PageOn, Start: got, Size: e.Size,
			Reason: fmt.Sprintf("a full response (%d features) of a tile counted at %d: asking once for the rest", got, matched)}
	case full || matched < 0 && got > 0 && e.Next && e.NextTrusted:
		// More may exist: a full response, or (without a count) a next link.
		if sameAsParent {
			return Verdict{Kind: Incomplete, Missing: max(matched-got, -1),
				Reason: "the server ignores the box asked for (its response holds features outside it, or exactly the features of the tile it was cut from), so smaller tiles cannot find the rest"}
		}
		v := Verdict{Kind: Split, Count: max(matched, 0), Reason: fmt.Sprintf("a full response (%d features) of a tile that may hold more", got)}
		if !full {
			v.CappedAt = got
			v.Reason = fmt.Sprintf("a response of %d features, short of the %d asked, with a next link and no count: the server caps its pages", got, e.Size)
		}
		return v
	case matched <= got:
		return Verdict{Kind: Complete}
	case matched > e.Size:
		// The server counts more than one response holds: smaller tiles.
		if sameAsParent {
			return Verdict{Kind: Incomplete, Missing: matched - got,
				Reason: "the server ignores the box asked for (its response holds features outside it, or exactly the features of the tile it was cut from)"}
		}
		return Verdict{Kind: Split, Count: matched, Reason: fmt.Sprintf("the server counts %d features, more than one response of %d", matched, e.Size)}
	case e.CountDisowned:
		return Verdict{Kind: Complete, Missing: matched - got, WrittenOff: "the server counted more features in this tile than in the tile containing it",
			Reason: fmt.Sprintf("the server counted %d features and returned %d", matched, got)}
	case !e.Pages:
		// The rest cannot be asked for on this server: smaller tiles can.
		if sameAsParent || got == 0 {
			return Verdict{Kind: Incomplete, Missing: matched - got,
				Reason: fmt.Sprintf("the server counted %d features in the tile and returned %d, and cannot be asked for the rest", matched, got)}
		}
		return Verdict{Kind: Split, Count: matched, Reason: fmt.Sprintf("the server counted %d features and returned %d; smaller tiles", matched, got)}
	case got == 0:
		return Verdict{Kind: Incomplete, Missing: matched,
			Reason: fmt.Sprintf("the server counted %d features in the tile and returned none", matched)}
	}
	// Short of the count without being full: a server capping its pages below the size
	// asked, or one leaving features out. Ask once for the rest.
	return Verdict{Kind: PageOn, Start: got, Size: e.Size - got,
		Reason: fmt.Sprintf("the server counted %d features and returned %d; asking for the rest", matched, got)}
}

// tileCount is how many features the evidence shows the tile holds: the larger of the
// tile's own count and the response's numberMatched; -1 when neither says. A
// numberMatched that may be of what the response holds (WFS 1.x numberOfFeatures) is
// taken only where it is larger than that, since only a larger number proves the
// response short.
func tileCount(e Evidence) int64 {
	matched := e.Matched
	if !e.CountsInResponse && matched <= e.Returned {
		matched = -1
	}
	return max(matched, e.Counted)
}

// ignoresBox tells whether the response shows the server ignores the box asked for: it
// holds features mostly outside it, or the very features of the tile it was cut from.
// Smaller tiles cannot help there.
func ignoresBox(e Evidence) bool {
	return e.ParentPrint != 0 && e.Print == e.ParentPrint || e.Returned > 0 && 2*e.Outside > e.Returned
}

// decidePage judges a page of a tile that cannot be split, or the rest of a short tile.
func decidePage(e Evidence) Verdict {
	got := e.Returned
	var capped int64
	if e.Kind == AskProbe && got > 0 {
		capped = e.Start // the rest holds features: the tile's first response was a capped page
	}
	switch {
	case e.Kind == AskProbe && got > 0 && got >= e.Size && e.Start+got > e.Total:
		// Asked for the rest of a tile past its count, the server filled the page: it
		// counted too few, and nothing says how many more there are.
		return Verdict{Kind: Incomplete, Missing: -1,
			Reason: fmt.Sprintf("the server counted %d features in the tile, yet asked for those from %d on it returned a full page of %d", e.Total, e.Start, got)}
	case got >= e.Size || e.Start+got >= e.Total:
		return Verdict{Kind: Complete, CappedAt: capped}
	case got > 0:
		// The server capped this page below its planned size: the rest is another page,
		// or those features would never be asked for.
		return Verdict{Kind: PageOn, Start: e.Start + got, Size: e.Size - got, CappedAt: capped,
			Reason: fmt.Sprintf("page of %d came back with %d; asking for the rest", e.Size, got)}
	}
	missing := min(e.Size, e.Total-e.Start)
	if e.CountDisowned {
		return Verdict{Kind: Complete, Missing: missing, WrittenOff: "the server counted more features in this tile than in the tile containing it",
			Reason: fmt.Sprintf("asked for features %d.. of the %d counted, none came", e.Start, e.Total)}
	}
	return Verdict{Kind: Incomplete, Missing: missing,
		Reason: fmt.Sprintf("the server counted %d features in the tile; asked for those from %d on, it returned none", e.Total, e.Start)}
}
