package postgis

import "testing"

func TestOverlapOf(t *testing.T) {
	tests := []struct {
		name                      string
		matches, written, skipped int64
		want                      int64
	}{
		{name: "nothing skipped", matches: 5, written: 5, skipped: 0, want: 0},
		{name: "a repeat in the page of a row the unit wrote", matches: 2, written: 1, skipped: 1, want: 1},
		{name: "a row another unit of the run wrote", matches: 1, written: 0, skipped: 1, want: 1},
		{name: "rows an earlier run wrote", matches: 0, written: 0, skipped: 3, want: 0},
		{name: "some of each", matches: 4, written: 2, skipped: 5, want: 2},
		{name: "never above skipped", matches: 9, written: 1, skipped: 2, want: 2},
		{name: "never below 0 (a row the unit wrote another unit changed meanwhile)", matches: 1, written: 3, skipped: 1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := overlapOf(tt.matches, tt.written, tt.skipped); got != tt.want {
				t.Errorf("overlapOf(%d, %d, %d) = %d, want %d", tt.matches, tt.written, tt.skipped, got, tt.want)
			}
		})
	}
}
