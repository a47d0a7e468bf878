package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Lister lists entries; the stores implement it.
type Lister interface {
	ListDeadLetters(ctx context.Context, f Filter) ([]Entry, error)
}

// Discarder closes open entries without replaying them; the stores implement it.
type Discarder interface {
	DiscardDeadLetters(ctx context.Context, ids []int64) ([]int64, error)
}

// Selection names the entries to replay, as geoflow dlq replay and the web UI's API take
// them: entry ids, or All, or a Filter that Filtered says narrows something.
type Selection struct {
	IDs []int64
	All bool
	// Filter selects entries when IDs is empty; only open entries are ever replayed.
	Filter Filter
	// Filtered says Filter names something (a flow, task, run, class, host, time or
	// area): a replay of "everything" must be asked for with All.
	Filtered bool
}

// Check says what is wrong with s before any entry is read.
func (s Selection) Check() error {
	switch {
	case len(s.IDs) == 0 && !s.All && !s.Filtered:
		return errors.New("name what to replay: entry ids, --all, or filters such as --run or --class")
	case len(s.IDs) > 0 && s.All:
		return errors.New("give entry ids or --all, not both")
	case s.Filter.Status != "" && s.Filter.Status != StatusOpen:
		return errors.New("only open entries are replayed; --status cannot change that")
	}
	return nil
}

// SelectReplay returns the open entries s names. Named entries must all exist and be
// open: replaying a closed one would redo work silently, and a typo must not pass
// unnoticed. The error says what is wrong with s.
func SelectReplay(ctx context.Context, l Lister, s Selection) ([]Entry, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	f := s.Filter
	f.Status = StatusOpen
	if len(s.IDs) > 0 {
		f = Filter{IDs: s.IDs}
	}
	entries, err := l.ListDeadLetters(ctx, f)
	if err != nil {
		return nil, err
	}
	if len(s.IDs) == 0 {
		return entries, nil
	}
	found := map[int64]Entry{}
	for _, e := range entries {
		found[e.ID] = e
	}
	var problems []string
	for _, id := range s.IDs {
		e, ok := found[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no dead letter %d", id))
		case e.Status != StatusOpen:
			problems = append(problems, fmt.Sprintf("dead letter %d is %s, not open", id, e.Status))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return entries, nil
}

// Discard closes the open entries ids and returns those it closed; the error names the
// ids it could not (no such entry, or not open), after the others are closed.
func Discard(ctx context.Context, d Discarder, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, errors.New("name the dead letters to discard by id")
	}
	done, err := d.DiscardDeadLetters(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(done) == len(ids) {
		return done, nil
	}
	got := map[int64]bool{}
	for _, id := range done {
		got[id] = true
	}
	var missed []string
	for _, id := range ids {
		if !got[id] {
			missed = append(missed, strconv.FormatInt(id, 10))
		}
	}
	return done, fmt.Errorf("not discarded (no such entry, or not open): %s", strings.Join(missed, ", "))
}
