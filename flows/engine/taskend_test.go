package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// TestTaskEnd: how a task whose units have ended ends, from its finish's verdict, its
// unrecorded units and its dead letters by class; a failure wins over incompleteness.
func TestTaskEnd(t *testing.T) {
	short := fmt.Errorf("checking: %w", &tasks.IncompleteError{Where: "0,0,1,1", Missing: 3, Reason: "the server matched 10 features but 7 distinct features are stored there"})
	mass := &store.MassDeleteError{}
	tests := []struct {
		name    string
		end     taskEnd
		want    store.State
		wantMsg string
	}{
		{name: "nothing wrong", end: taskEnd{}, want: store.Done},
		{name: "finish finds the harvest short", end: taskEnd{finish: short}, want: store.Incomplete, wantMsg: "incomplete: 3 features missing in 0,0,1,1"},
		{name: "every dead letter incomplete", end: taskEnd{dead: 2, deadByClass: map[dlq.Class]int64{dlq.ClassIncomplete: 2}},
			want: store.Incomplete, wantMsg: "2 units incomplete"},
		{name: "short finish and incomplete dead letters", end: taskEnd{finish: short, dead: 1, deadByClass: map[dlq.Class]int64{dlq.ClassIncomplete: 1}},
			want: store.Incomplete, wantMsg: "1 units incomplete"},
		{name: "an http_5xx dead letter beside incomplete ones fails", end: taskEnd{dead: 3, deadByClass: map[dlq.Class]int64{dlq.ClassIncomplete: 2, dlq.ClassHTTP5xx: 1}},
			want: store.Failed, wantMsg: "3 units failed"},
		{name: "a failed unit wins over a short finish", end: taskEnd{finish: short, dead: 1, deadByClass: map[dlq.Class]int64{dlq.ClassTimeout: 1}},
			want: store.Failed, wantMsg: "1 units failed"},
		{name: "dead letters that could not be counted fail", end: taskEnd{dead: 1}, want: store.Failed, wantMsg: "1 units failed"},
		{name: "the safety rail fails", end: taskEnd{finish: mass}, want: store.Failed},
		{name: "unrecorded units fail", end: taskEnd{finish: short, unrecorded: 2, dead: 1, deadByClass: map[dlq.Class]int64{dlq.ClassIncomplete: 1}},
			want: store.Failed, wantMsg: "2 units could not be recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := tt.end.state()
			if got != tt.want || !strings.Contains(msg, tt.wantMsg) || (got == store.Done) != (msg == "") {
				t.Errorf("state() = %q, %q; want %q with %q", got, msg, tt.want, tt.wantMsg)
			}
		})
	}
}

// TestRunState: a run is failed when a task failed or could not run for it, else
// incomplete when a task is, else done.
func TestRunState(t *testing.T) {
	tests := []struct {
		name   string
		states map[string]store.State
		want   store.State
	}{
		{name: "no tasks", want: store.Done},
		{name: "all done", states: map[string]store.State{"a": store.Done, "b": store.Done}, want: store.Done},
		{name: "one incomplete", states: map[string]store.State{"a": store.Done, "b": store.Incomplete}, want: store.Incomplete},
		{name: "incomplete and failed", states: map[string]store.State{"a": store.Incomplete, "b": store.Failed}, want: store.Failed},
		{name: "incomplete and upstream failed", states: map[string]store.State{"a": store.Incomplete, "b": store.UpstreamFailed}, want: store.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runState(tt.states); got != tt.want {
				t.Errorf("runState(%v) = %q, want %q", tt.states, got, tt.want)
			}
		})
	}
}
