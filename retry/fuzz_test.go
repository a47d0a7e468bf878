package retry

import (
	"net/http"
	"testing"
	"time"
)

// The parsers read what arbitrary servers send: they must never panic,
// never return a negative wait, and reject what they do not understand.

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "1.5", "120000", "1772366430", "1772366401500",
		"Sun, 01 Mar 2026 12:00:42 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:00:05 2026",
		"-5", "", "soon", "5s", "99999999999999999999999", "1.2.3", "1743440400000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseRetryAfter(s, testNow)
		if !ok && d != 0 {
			t.Errorf("parseRetryAfter(%q) = %v with ok false", s, d)
		}
		if d < 0 {
			t.Errorf("parseRetryAfter(%q) = %v, negative", s, d)
		}
		if ms, ok := parseRetryAfterMillis(s); ok && ms < 0 {
			t.Errorf("parseRetryAfterMillis(%q) = %v, negative", s, ms)
		}
	})
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"1772366460", "1772366400.25", "1772366400750", "30", "0.5", "6m0s", "250ms",
		"Sun, 01 Mar 2026 12:00:10 GMT", "-1s", "-3", "Inf", "NaN", "1e20", "0x10", "1h-1m", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, ok := parseReset(s, testNow); ok && r.IsZero() {
			t.Errorf("parseReset(%q) gave the zero time", s)
		}
		if d, ok := parseDelta(s); ok && d < 0 {
			t.Errorf("parseDelta(%q) = %v, negative", s, d)
		}
		if n, w, ok := parseLimit(s); ok && (n <= 0 || w < 0) {
			t.Errorf("parseLimit(%q) = %d, %v", s, n, w)
		}
	})
}

func FuzzParseIETF(f *testing.F) {
	for _, s := range [][2]string{
		{`"burst";r=50;t=30`, `"burst";q=100;w=60`},
		{`default;r=3;t=1`, `default;q=10;w=1`},
		{`"day";r=900;t=3600, "burst";r=2;t=5`, `"day";q=1000;w=86400, "burst";q=10;w=10`},
		{`limit=100, remaining=50, reset=30`, ``},
		{`"x;r=5`, ``},
		{`"x";r=5,`, `"x";q=`},
		{`"a\"b";r=-1;t=-2`, `"a\"b";q=-3;w=0`},
		{`x;r=1.5;t=?1`, `x;q=?0`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rl, policy string) {
		q, ok := parseIETF(rl, policy, testNow)
		if !ok {
			return
		}
		if q.remaining < 0 || q.limit < 0 || q.window < 0 {
			t.Errorf("parseIETF(%q, %q) = %+v, negative field", rl, policy, q)
		}
		if q.limit > 0 && q.remaining > q.limit {
			t.Errorf("parseIETF(%q, %q) = %+v, remaining above limit", rl, policy, q)
		}
		if !q.reset.IsZero() && q.reset.Before(testNow) {
			t.Errorf("parseIETF(%q, %q) reset %v is in the past", rl, policy, q.reset)
		}
		h := http.Header{"Ratelimit": {rl}, "Ratelimit-Policy": {policy}}
		if hn := parseHints(h, testNow); !hn.hasQuota {
			t.Errorf("parseHints lost the IETF quota of %q", rl)
		}
		_ = time.Second
	})
}
