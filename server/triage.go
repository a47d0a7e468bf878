package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/flows/engine"
)

// triageRequest is the body of POST /api/dlq/replay and /api/dlq/discard: entry ids,
// or a filter (the CLI's flag names) with "all" to take every open entry it selects.
type triageRequest struct {
	IDs    []int64 `json:"ids"`
	All    bool    `json:"all"`
	Filter struct {
		Flow   string `json:"flow"`
		Task   string `json:"task"`
		Run    int64  `json:"run"`
		Class  string `json:"class"`
		Status string `json:"status"`
		Since  string `json:"since"`
		BBox   any    `json:"bbox"`
		Host   string `json:"host"`
	} `json:"filter"`
	// Wait (replay only) answers with the outcome once the replay is over, instead of
	// at once.
	Wait bool `json:"wait"`
	// DryRun lists what would be replayed or discarded and does nothing.
	DryRun bool `json:"dry_run"`
}

func (t triageRequest) selection() (dlq.Selection, error) {
	bbox, err := bboxText(t.Filter.BBox)
	if err != nil {
		return dlq.Selection{}, err
	}
	f := t.Filter
	if f.Run < 0 {
		return dlq.Selection{}, fmt.Errorf("--run %d: want a run id (a positive number)", f.Run)
	}
	args := dlq.FilterArgs{Flow: f.Flow, Task: f.Task, Run: f.Run, Class: f.Class, Status: f.Status, Since: f.Since, BBox: bbox, Host: f.Host}
	filter, err := args.Parse(time.Now())
	if err != nil {
		return dlq.Selection{}, err
	}
	filtered := args != (dlq.FilterArgs{Status: args.Status})
	return dlq.Selection{IDs: t.IDs, All: t.All, Filter: filter, Filtered: filtered}, nil
}

func (h *handler) replay(w http.ResponseWriter, r *http.Request) {
	if h.refused(w, r, "replay dead letters", true) {
		return
	}
	var t triageRequest
	if err := decode(r, &t); err != nil {
		h.fail(w, r, bodyStatus(err), err)
		return
	}
	sel, err := t.selection()
	if err == nil {
		err = sel.Check()
	}
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	entries, err := dlq.SelectReplay(r.Context(), triageStore{h.o.Store}, sel)
	if err != nil {
		h.triageFailed(w, r, err) // the store failed, or the ids named are not all open entries
		return
	}
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	switch {
	case t.DryRun || len(entries) == 0:
		writeJSON(w, http.StatusOK, map[string]any{"would_replay": len(entries), "ids": ids})
	case t.Wait:
		res, err := h.o.Launcher.ReplayNow(r.Context(), entries)
		switch {
		case errors.Is(err, ErrShuttingDown):
			h.fail(w, r, http.StatusServiceUnavailable, err)
		case err != nil:
			h.fail(w, r, http.StatusUnprocessableEntity, h.masked(err))
		default:
			writeJSON(w, http.StatusOK, replayOutcome(res))
		}
	default:
		if err := h.o.Launcher.Replay(entries, nil); err != nil {
			h.fail(w, r, http.StatusServiceUnavailable, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"replaying": len(entries), "ids": ids})
	}
}

type outcome struct {
	ID      int64  `json:"id"`
	OK      bool   `json:"ok"`
	NotSent bool   `json:"not_sent,omitempty"`
	Error   string `json:"error,omitempty"`
}

func replayOutcome(res *engine.ReplayResult) map[string]any {
	out := make([]outcome, len(res.Outcomes))
	n := 0
	for i, o := range res.Outcomes {
		out[i] = outcome{ID: o.Entry.ID, OK: o.OK, NotSent: o.NotSent, Error: o.Error}
		if o.OK {
			n++
		}
	}
	notes := res.Notes
	if notes == nil {
		notes = []string{}
	}
	return map[string]any{"replayed": n, "outcomes": out, "units": res.Units, "dead": res.Dead, "not_sent": res.NotSent, "interrupted": res.Interrupted, "notes": notes, "ok": res.OK()}
}

func (h *handler) discard(w http.ResponseWriter, r *http.Request) {
	if h.refused(w, r, "discard dead letters", false) {
		return
	}
	var t triageRequest
	if err := decode(r, &t); err != nil {
		h.fail(w, r, bodyStatus(err), err)
		return
	}
	if t.Wait {
		h.fail(w, r, http.StatusBadRequest, errors.New("wait: a discard always answers with its outcome"))
		return
	}
	sel, err := t.selection()
	switch {
	case err != nil:
	case len(sel.IDs) == 0 && !sel.All && !sel.Filtered:
		err = errors.New("name what to discard: entry ids, all, or a filter such as run or class")
	case len(sel.IDs) > 0 && sel.All:
		err = errors.New("give entry ids or all, not both")
	case sel.Filter.Status != "" && sel.Filter.Status != dlq.StatusOpen:
		err = errors.New("only open entries are discarded; status cannot change that")
	}
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	ids := sel.IDs
	if len(ids) == 0 {
		entries, err := dlq.SelectReplay(r.Context(), triageStore{h.o.Store}, sel) // the open entries the filter selects
		if err != nil {
			h.triageFailed(w, r, err)
			return
		}
		for _, e := range entries {
			ids = append(ids, e.ID)
		}
		if len(ids) == 0 {
			writeJSON(w, http.StatusOK, map[string]any{"discarded": 0, "ids": []int64{}})
			return
		}
	}
	if t.DryRun {
		writeJSON(w, http.StatusOK, map[string]any{"would_discard": len(ids), "ids": ids})
		return
	}
	done, err := dlq.Discard(r.Context(), triageStore{h.o.Store}, ids)
	if done == nil {
		done = []int64{}
	}
	if err != nil && len(done) == 0 {
		h.triageFailed(w, r, err)
		return
	}
	body := map[string]any{"discarded": len(done), "ids": done}
	if err != nil {
		body["error"] = err.Error()
	}
	writeJSON(w, http.StatusOK, body)
}

// storeError is a failure of the store during triage, told apart from what is wrong
// with the request (entries named that are not open, or do not exist): the first is the
// server's (500, and logged), the second the client's (400).
type storeError struct {
	op  string // what the store was doing: "listing the dead letters"
	err error
}

func (e *storeError) Error() string { return e.op + ": " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// triageStore is the store as dlq's triage uses it, its failures marked storeError.
type triageStore struct{ st Backend }

func (s triageStore) ListDeadLetters(ctx context.Context, f dlq.Filter) ([]dlq.Entry, error) {
	es, err := s.st.ListDeadLetters(ctx, f)
	if err != nil {
		return nil, &storeError{"listing the dead letters", err}
	}
	return es, nil
}

func (s triageStore) DiscardDeadLetters(ctx context.Context, ids []int64) ([]int64, error) {
	done, err := s.st.DiscardDeadLetters(ctx, ids)
	if err != nil {
		return nil, &storeError{fmt.Sprintf("discarding %d dead letters", len(ids)), err}
	}
	return done, nil
}

var (
	_ dlq.Lister    = triageStore{}
	_ dlq.Discarder = triageStore{}
)

// triageFailed answers an error of dlq.SelectReplay or dlq.Discard: 500 when the store
// failed, 400 when the request named what cannot be replayed or discarded.
func (h *handler) triageFailed(w http.ResponseWriter, r *http.Request, err error) {
	var se *storeError
	if errors.As(err, &se) {
		h.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	h.fail(w, r, http.StatusBadRequest, err)
}
