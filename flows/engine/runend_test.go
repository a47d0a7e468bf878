package engine

import (
	"reflect"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

// TestRunEnd: how a run whose tasks have all ended ends: as its tasks did, failed when
// its --bbox touched none of its tasks or a unit's outcome was not recorded, interrupted
// when it was stopped, whatever else.
func TestRunEnd(t *testing.T) {
	box := &orb.Bound{Min: orb.Point{48.1, 11.5}, Max: orb.Point{48.2, 11.6}}
	area := orb.Bound{Min: orb.Point{11, 48}, Max: orb.Point{12, 49}}
	swapped := map[string]string{"a": "--bbox 48.1,11.5,48.2,11.6 does not touch its area 11,48,12,49 (longitude and latitude swapped?)"}
	for _, tt := range []struct {
		name      string
		end       runEnd
		want      store.State
		wantMsg   string
		wantFails map[string]string
	}{
		{name: "all done", end: runEnd{states: map[string]store.State{"a": store.Done, "b": store.Done}}, want: store.Done},
		{name: "one incomplete", end: runEnd{states: map[string]store.State{"a": store.Done, "b": store.Incomplete}}, want: store.Incomplete},
		{name: "upstream failed", end: runEnd{states: map[string]store.State{"a": store.Failed, "b": store.UpstreamFailed}}, want: store.Failed},
		{name: "bbox outside every task", end: runEnd{states: map[string]store.State{"a": store.Done}, area: box, outside: map[string]orb.Bound{"a": area}},
			want: store.Failed, wantMsg: "--bbox 48.1,11.5,48.2,11.6 touches no task's area", wantFails: swapped},
		{name: "bbox outside one task of two", end: runEnd{states: map[string]store.State{"a": store.Done, "b": store.Done}, area: box, outside: map[string]orb.Bound{"a": area}},
			want: store.Done},
		{name: "bbox outside, but stopped", end: runEnd{states: map[string]store.State{"a": store.Done}, area: box, outside: map[string]orb.Bound{"a": area}, stopped: true},
			want: store.Interrupted},
		{name: "an outcome not recorded", end: runEnd{states: map[string]store.State{"a": store.Done}, unrecorded: 2}, want: store.Failed},
		{name: "stopped wins", end: runEnd{states: map[string]store.State{"a": store.Failed}, unrecorded: 1, stopped: true}, want: store.Interrupted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, msg, fails := tt.end.decide()
			if got != tt.want || msg != tt.wantMsg || !reflect.DeepEqual(fails, tt.wantFails) {
				t.Errorf("decide() = %s, %q, %v; want %s, %q, %v", got, msg, fails, tt.want, tt.wantMsg, tt.wantFails)
			}
		})
	}
}
