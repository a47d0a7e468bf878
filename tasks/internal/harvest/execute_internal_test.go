package harvest

import "testing"

func TestCountFrom(t *testing.T) {
	const ps = 1000 // an estimate of up to fill*ps = 700 features is fetched at once
	counts := Caps{Counts: true, MatchedInResponse: true}
	tests := []struct {
		name          string
		sp            spec
		caps          Caps
		estimatesHold bool
		want          countSource
	}{
		{name: "the plan counted the root", sp: spec{Exact: true, Count: 5000}, caps: counts, estimatesHold: true, want: countExact},
		{name: "exact even where the server cannot count", sp: spec{Exact: true, Count: 0}, want: countExact},
		{name: "a small estimate is fetched on", sp: spec{Count: 700}, caps: counts, estimatesHold: true, want: countEstimate},
		{name: "an estimate above fill is counted", sp: spec{Count: 701}, caps: counts, estimatesHold: true, want: countAsked},
		{name: "estimates that no longer hold are counted", sp: spec{Count: 10}, caps: counts, want: countAsked},
		{name: "without numberMatched in the response an estimate is counted", sp: spec{Count: 10},
			caps: Caps{Counts: true}, estimatesHold: true, want: countAsked},
		{name: "no estimate is asked", caps: counts, estimatesHold: true, want: countAsked},
		{name: "a server that cannot count", sp: spec{Count: 5000}, caps: Caps{MatchedInResponse: true}, estimatesHold: true, want: countUnknown},
		{name: "an estimate without counts or numberMatched", sp: spec{Count: 10}, estimatesHold: true, want: countUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countFrom(tt.sp, ps, tt.caps, tt.estimatesHold); got != tt.want {
				t.Errorf("countFrom = %d, want %d", got, tt.want)
			}
		})
	}
}
