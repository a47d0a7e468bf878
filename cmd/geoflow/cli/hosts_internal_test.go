package cli

import (
	"strings"
	"testing"

	"github.com/geoflow/geoflow/store"
)

// TestPrintHosts: the summary names each host with its figures; when several processes
// sent the run's requests it splits them by process and says the breakers' openings are
// summed over them.
func TestPrintHosts(t *testing.T) {
	a := store.HostCount{Host: "https://a.example:443", Requests: 412, Retries: 15, RateLimited: 13, WaitedMS: 3140, BreakerOpened: 2}
	tests := []struct {
		name string
		hs   store.RunHosts
		want string
	}{
		{name: "one process", hs: store.RunHosts{Hosts: []store.HostCount{a}, Workers: []store.WorkerHosts{{Worker: "me-1", Units: 30, Hosts: []store.HostCount{a}}}},
			want: "  host https://a.example:443: 412 requests, 15 retries, 13 answered 429, waited 3.1s; its breaker opened 2 times\n"},
		{name: "no requests", hs: store.RunHosts{}, want: ""},
		{name: "a pool", hs: store.RunHosts{Hosts: []store.HostCount{a}, Workers: []store.WorkerHosts{
			{Worker: "me-1", Hosts: []store.HostCount{{Host: a.Host, Requests: 2}}},
			{Worker: "w1", Units: 20, Hosts: []store.HostCount{{Host: a.Host, Requests: 410, Retries: 15, RateLimited: 13, WaitedMS: 3140, BreakerOpened: 2}}},
			{Worker: "w2", Units: 1},
		}}, want: "  host https://a.example:443: 412 requests, 15 retries, 13 answered 429, waited 3.1s; its breakers opened 2 times (summed over the processes)\n" +
			"  by process:\n" +
			"    me-1 (this process), 0 units:\n" +
			"      host https://a.example:443: 2 requests, 0 retries, 0 answered 429, waited 0s; its breaker never opened\n" +
			"    w1, 20 units:\n" +
			"      host https://a.example:443: 410 requests, 15 retries, 13 answered 429, waited 3.1s; its breaker opened 2 times\n" +
			"    w2, 1 units: no requests\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printHosts(&b, tt.hs, "me-1")
			if b.String() != tt.want {
				t.Errorf("printHosts:\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}
