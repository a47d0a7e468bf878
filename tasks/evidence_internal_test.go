package tasks

import "testing"

func TestTileCount(t *testing.T) {
	tests := []struct {
		name string
		e    Evidence
		want int64
	}{
		{name: "nothing counted", e: Evidence{Returned: 10, Matched: -1, Counted: -1, CountsInResponse: true}, want: -1},
		{name: "the tile's count", e: Evidence{Returned: 10, Matched: -1, Counted: 40, CountsInResponse: true}, want: 40},
		{name: "numberMatched above the count", e: Evidence{Returned: 10, Matched: 50, Counted: 40, CountsInResponse: true}, want: 50},
		{name: "the count above numberMatched", e: Evidence{Returned: 10, Matched: 20, Counted: 40, CountsInResponse: true}, want: 40},
		{name: "a 1.x number no larger than the response is no count", e: Evidence{Returned: 10, Matched: 10, Counted: -1}, want: -1},
		{name: "a 1.x number larger than the response", e: Evidence{Returned: 10, Matched: 30, Counted: -1}, want: 30},
		{name: "a 1.x number falls back to the tile's count", e: Evidence{Returned: 10, Matched: 5, Counted: 8}, want: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tileCount(tt.e); got != tt.want {
				t.Errorf("tileCount = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestIgnoresBox(t *testing.T) {
	tests := []struct {
		name string
		e    Evidence
		want bool
	}{
		{name: "a response inside its box", e: Evidence{Returned: 10, Outside: 2, Print: 7, ParentPrint: 9}},
		{name: "the parent's very features", e: Evidence{Returned: 10, Print: 9, ParentPrint: 9}, want: true},
		{name: "no parent to compare with", e: Evidence{Returned: 10}},
		{name: "mostly outside", e: Evidence{Returned: 10, Outside: 6}, want: true},
		{name: "half outside is not mostly", e: Evidence{Returned: 10, Outside: 5}},
		{name: "an empty response", e: Evidence{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ignoresBox(tt.e); got != tt.want {
				t.Errorf("ignoresBox = %v, want %v", got, tt.want)
			}
		})
	}
}
