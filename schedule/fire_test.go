package schedule

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/geoflow/geoflow/store"
)

func TestBusyVerdict(t *testing.T) {
	lockErr := errors.New("conn refused")
	tests := []struct {
		name         string
		overlap      string
		lockErr      error
		shuttingDown bool
		wantStatus   string
		wantMsg      string
	}{
		{name: "skip while a run goes", overlap: OverlapSkip,
			wantStatus: store.FireSkippedOverlap, wantMsg: "the previous run of the flow is still going"},
		{name: "queue while a run goes", overlap: OverlapQueue, wantStatus: store.FireQueued},
		{name: "queue during shutdown without a lock error still queues", overlap: OverlapQueue, shuttingDown: true,
			wantStatus: store.FireQueued},
		{name: "skip during shutdown without a lock error", overlap: OverlapSkip, shuttingDown: true,
			wantStatus: store.FireSkippedOverlap, wantMsg: "the previous run of the flow is still going"},
		{name: "lock error skips a queue fire", overlap: OverlapQueue, lockErr: lockErr,
			wantStatus: store.FireSkippedOverlap, wantMsg: "cannot tell whether the previous run is still going: conn refused"},
		{name: "lock error skips a skip fire", overlap: OverlapSkip, lockErr: lockErr,
			wantStatus: store.FireSkippedOverlap, wantMsg: "cannot tell whether the previous run is still going: conn refused"},
		{name: "lock error at shutdown cancels", overlap: OverlapQueue, lockErr: lockErr, shuttingDown: true,
			wantStatus: store.FireCancelled, wantMsg: "shutdown came before the fire could start"},
		{name: "lock error at shutdown cancels a skip fire", overlap: OverlapSkip, lockErr: lockErr, shuttingDown: true,
			wantStatus: store.FireCancelled, wantMsg: "shutdown came before the fire could start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg := busyVerdict(tt.overlap, tt.lockErr, tt.shuttingDown)
			if status != tt.wantStatus || msg != tt.wantMsg {
				t.Errorf("busyVerdict = %q, %q; want %q, %q", status, msg, tt.wantStatus, tt.wantMsg)
			}
		})
	}
}

func TestEnqueueDequeue(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(mins ...int) []time.Time {
		out := []time.Time{}
		for _, m := range mins {
			out = append(out, t0.Add(time.Duration(m)*time.Minute))
		}
		return out
	}
	full := make([]time.Time, maxQueued)
	for i := range full {
		full[i] = t0.Add(time.Duration(i) * time.Minute)
	}
	tests := []struct {
		name    string
		waiting []time.Time
		at      time.Time
		want    []time.Time
		wantIn  bool
	}{
		{name: "first in", waiting: nil, at: t0, want: at(0), wantIn: true},
		{name: "later goes last", waiting: at(0, 1), at: t0.Add(5 * time.Minute), want: at(0, 1, 5), wantIn: true},
		{name: "earlier goes first", waiting: at(3, 4), at: t0.Add(time.Minute), want: at(1, 3, 4), wantIn: true},
		{name: "in between", waiting: at(1, 5), at: t0.Add(2 * time.Minute), want: at(1, 2, 5), wantIn: true},
		{name: "one short of full", waiting: full[:maxQueued-1], at: t0.Add(time.Hour),
			want: append(slices.Clone(full[:maxQueued-1]), t0.Add(time.Hour)), wantIn: true},
		{name: "full", waiting: full, at: t0.Add(time.Hour), want: full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, in := enqueue(slices.Clone(tt.waiting), tt.at)
			if in != tt.wantIn || !slices.EqualFunc(got, tt.want, time.Time.Equal) {
				t.Fatalf("enqueue = %v, %v; want %v, %v", got, in, tt.want, tt.wantIn)
			}
			if !in {
				return
			}
			if back := dequeue(got, tt.at); !slices.EqualFunc(back, tt.waiting, time.Time.Equal) {
				t.Errorf("dequeue after enqueue = %v, want %v", back, tt.waiting)
			}
		})
	}
	t.Run("dequeue of a fire not queued", func(t *testing.T) {
		if got := dequeue(at(1, 2), t0); !slices.EqualFunc(got, at(1, 2), time.Time.Equal) {
			t.Errorf("dequeue = %v, want it unchanged", got)
		}
	})
	t.Run("dequeue matches the instant, not the location", func(t *testing.T) {
		local := t0.Add(time.Minute).In(time.FixedZone("X", 3600))
		if got := dequeue(at(1, 2), local); !slices.EqualFunc(got, at(2), time.Time.Equal) {
			t.Errorf("dequeue = %v, want %v", got, at(2))
		}
	})
}
