package retry

import (
	"net/http"
	"testing"
	"time"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  time.Duration
		valid bool
	}{
		{name: "delay seconds", in: "120", want: 120 * time.Second, valid: true},
		{name: "zero", in: "0", want: 0, valid: true},
		{name: "spaces", in: "  7 ", want: 7 * time.Second, valid: true},
		{name: "decimal seconds", in: "1.5", want: 1500 * time.Millisecond, valid: true},
		{name: "largest seconds", in: "99999", want: 99999 * time.Second, valid: true},
		{name: "milliseconds by magnitude", in: "120000", want: 120 * time.Second, valid: true},
		{name: "epoch seconds", in: "1772366430", want: 30 * time.Second, valid: true},
		{name: "epoch milliseconds", in: "1772366401500", want: 1500 * time.Millisecond, valid: true},
		{name: "epoch in the past", in: "1772366000", want: 0, valid: true},
		{name: "IMF-fixdate", in: "Sun, 01 Mar 2026 12:00:42 GMT", want: 42 * time.Second, valid: true},
		{name: "RFC 850", in: "Sunday, 01-Mar-26 12:01:00 GMT", want: time.Minute, valid: true},
		{name: "asctime", in: "Sun Mar  1 12:00:05 2026", want: 5 * time.Second, valid: true},
		{name: "date in the past", in: "Sun, 01 Mar 2026 11:00:00 GMT", want: 0, valid: true},
		{name: "484289 hours in ms is just capped later", in: "1743440400000000", valid: false},
		{name: "negative", in: "-5", valid: false},
		{name: "empty", in: "", valid: false},
		{name: "garbage", in: "soon", valid: false},
		{name: "unit suffix", in: "5s", valid: false},
		{name: "two dots", in: "1.2.3", valid: false},
		{name: "trailing dot", in: "5.", valid: false},
		{name: "overflow", in: "99999999999999999999999", valid: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, testNow)
			if ok != tt.valid || (ok && got != tt.want) {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.valid)
			}
		})
	}
}

func TestParseReset(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  time.Duration // from testNow
		valid bool
	}{
		{name: "epoch seconds", in: "1772366460", want: time.Minute, valid: true},
		{name: "epoch seconds with fraction", in: "1772366400.25", want: 250 * time.Millisecond, valid: true},
		{name: "epoch milliseconds", in: "1772366400750", want: 750 * time.Millisecond, valid: true},
		{name: "seconds to go", in: "30", want: 30 * time.Second, valid: true},
		{name: "decimal seconds to go", in: "0.5", want: 500 * time.Millisecond, valid: true},
		{name: "large seconds to go", in: "86400", want: 24 * time.Hour, valid: true},
		{name: "go duration", in: "6m0s", want: 6 * time.Minute, valid: true},
		{name: "go duration ms", in: "250ms", want: 250 * time.Millisecond, valid: true},
		{name: "http date", in: "Sun, 01 Mar 2026 12:00:10 GMT", want: 10 * time.Second, valid: true},
		{name: "negative duration", in: "-1s", valid: false},
		{name: "negative number", in: "-3", valid: false},
		{name: "garbage", in: "tomorrow", valid: false},
		{name: "bare letters that parse as float", in: "Inf", valid: false},
		{name: "empty", in: " ", valid: false},
		{name: "absurd", in: "1e20", valid: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseReset(tt.in, testNow)
			if ok != tt.valid || (ok && got.Sub(testNow) != tt.want) {
				t.Errorf("parseReset(%q) = %v, %v; want +%v, %v", tt.in, got.Sub(testNow), ok, tt.want, tt.valid)
			}
		})
	}
}

func TestParseIETF(t *testing.T) {
	tests := []struct {
		name   string
		rl     string
		policy string
		want   quotaObs
		valid  bool
	}{
		{name: "item with policy", rl: `"burst";r=50;t=30`, policy: `"burst";q=100;w=60`,
			want: quotaObs{limit: 100, remaining: 50, reset: testNow.Add(30 * time.Second), window: time.Minute}, valid: true},
		{name: "token name", rl: `default;r=3;t=1`, policy: `default;q=10;w=1`,
			want: quotaObs{limit: 10, remaining: 3, reset: testNow.Add(time.Second), window: time.Second}, valid: true},
		{name: "fewest remaining governs", rl: `"day";r=900;t=3600, "burst";r=2;t=5`, policy: `"day";q=1000;w=86400, "burst";q=10;w=10`,
			want: quotaObs{limit: 10, remaining: 2, reset: testNow.Add(5 * time.Second), window: 10 * time.Second}, valid: true},
		{name: "no policy", rl: `"x";r=5;t=2`,
			want: quotaObs{limit: 0, remaining: 5, reset: testNow.Add(2 * time.Second)}, valid: true},
		{name: "malformed policy ignored", rl: `"x";r=5;t=2`, policy: `"x";q=`,
			want: quotaObs{remaining: 5, reset: testNow.Add(2 * time.Second)}, valid: true},
		{name: "draft-06 dictionary", rl: `limit=100, remaining=50, reset=30`,
			want: quotaObs{limit: 100, remaining: 50, reset: testNow.Add(30 * time.Second)}, valid: true},
		{name: "no r parameter", rl: `"x";t=2`, valid: false},
		{name: "unterminated string", rl: `"x;r=5`, valid: false},
		{name: "trailing comma", rl: `"x";r=5,`, valid: false},
		{name: "empty", rl: ``, valid: false},
		{name: "garbage", rl: `;;;`, valid: false},
		{name: "bad number", rl: `"x";r=5-5`, valid: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseIETF(tt.rl, tt.policy, testNow)
			if ok != tt.valid || (ok && !sameQuota(got, tt.want)) {
				t.Errorf("parseIETF(%q, %q) = %+v, %v; want %+v, %v", tt.rl, tt.policy, got, ok, tt.want, tt.valid)
			}
		})
	}
}

func TestParseHints(t *testing.T) {
	tests := []struct {
		name      string
		headers   map[string]string
		wantRA    time.Duration
		hasRA     bool
		wantQuota quotaObs
		hasQuota  bool
	}{
		{name: "nothing", headers: map[string]string{}},
		{name: "x-ratelimit epoch", headers: map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1772366410"},
			wantQuota: quotaObs{limit: 60, remaining: 0, reset: testNow.Add(10 * time.Second)}, hasQuota: true},
		{name: "x-ratelimit reset-after wins over reset", headers: map[string]string{"X-RateLimit-Remaining": "4", "X-RateLimit-Reset-After": "2.5", "X-RateLimit-Reset": "99"},
			wantQuota: quotaObs{remaining: 4, reset: testNow.Add(2500 * time.Millisecond)}, hasQuota: true},
		{name: "x-ratelimit limit with window", headers: map[string]string{"X-RateLimit-Limit": "100, 100;w=60", "X-RateLimit-Remaining": "7"},
			wantQuota: quotaObs{limit: 100, remaining: 7, window: time.Minute}, hasQuota: true},
		{name: "negative remaining is zero", headers: map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "-1"},
			wantQuota: quotaObs{limit: 10}, hasQuota: true},
		{name: "malformed remaining ignored", headers: map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "lots"}},
		{name: "ietf triple", headers: map[string]string{"RateLimit-Limit": "10", "RateLimit-Remaining": "3", "RateLimit-Reset": "4"},
			wantQuota: quotaObs{limit: 10, remaining: 3, reset: testNow.Add(4 * time.Second)}, hasQuota: true},
		{name: "ietf wins over x-ratelimit", headers: map[string]string{"RateLimit": `"a";r=1;t=9`, "X-RateLimit-Remaining": "50"},
			wantQuota: quotaObs{remaining: 1, reset: testNow.Add(9 * time.Second)}, hasQuota: true},
		{name: "malformed ietf falls back", headers: map[string]string{"RateLimit": `"a;r=1`, "X-RateLimit-Remaining": "50"},
			wantQuota: quotaObs{remaining: 50}, hasQuota: true},
		{name: "retry-after beside quota", headers: map[string]string{"Retry-After": "3", "X-RateLimit-Remaining": "0"},
			wantRA: 3 * time.Second, hasRA: true, wantQuota: quotaObs{}, hasQuota: true},
		{name: "retry-after-ms", headers: map[string]string{"Retry-After-Ms": "250"}, wantRA: 250 * time.Millisecond, hasRA: true},
		{name: "garbage retry-after ignored", headers: map[string]string{"Retry-After": "later"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got := parseHints(h, testNow)
			if got.hasRetryAfter != tt.hasRA || got.retryAfter != tt.wantRA {
				t.Errorf("retry-after = %v, %v; want %v, %v", got.retryAfter, got.hasRetryAfter, tt.wantRA, tt.hasRA)
			}
			if got.hasQuota != tt.hasQuota || !sameQuota(got.quota, tt.wantQuota) {
				t.Errorf("quota = %+v, %v; want %+v, %v", got.quota, got.hasQuota, tt.wantQuota, tt.hasQuota)
			}
		})
	}
}

func sameQuota(a, b quotaObs) bool {
	return a.limit == b.limit && a.remaining == b.remaining && a.window == b.window && a.reset.Equal(b.reset)
}

func TestSFBare(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     string
		ok       bool
		wantRest string
	}{
		{name: "empty input", in: ""},
		{name: "string", in: `"burst";r=5`, want: "burst", ok: true, wantRest: ";r=5"},
		{name: "empty string", in: `""`, want: "", ok: true},
		{name: "escaped quote and backslash", in: `"a\"b\\c"`, want: `a"b\c`, ok: true},
		{name: "other escape", in: `"a\nb"`},
		{name: "backslash at the end", in: `"a\`},
		{name: "unterminated string", in: `"abc`},
		{name: "control character in string", in: "\"a\x01b\""},
		{name: "non-ASCII in string", in: `"é"`},
		{name: "true", in: "?1;x", want: "?1", ok: true, wantRest: ";x"},
		{name: "false", in: "?0", want: "?0", ok: true},
		{name: "boolean of another digit", in: "?2"},
		{name: "lone question mark", in: "?"},
		{name: "integer", in: "42;w=1", want: "42", ok: true, wantRest: ";w=1"},
		{name: "negative decimal", in: "-1.5, x", want: "-1.5", ok: true, wantRest: ", x"},
		{name: "trailing dot is taken", in: "1.", want: "1.", ok: true},
		{name: "two dots", in: "1.2.3"},
		{name: "lone minus", in: "-"},
		{name: "minus before a letter", in: "-x"},
		{name: "leading dot", in: ".5"},
		{name: "token", in: "default;q=10", want: "default", ok: true, wantRest: ";q=10"},
		{name: "token with tchar, colon and slash", in: "Ab9/x:y!#$%&'*+-.^_`|~ z", want: "Ab9/x:y!#$%&'*+-.^_`|~", ok: true, wantRest: " z"},
		{name: "token from a star", in: "*x,", want: "*x", ok: true, wantRest: ","},
		{name: "token stops at a quote", in: `a"b"`, want: "a", ok: true, wantRest: `"b"`},
		{name: "token cannot start with a colon", in: ":x"},
		{name: "byte sequence refused", in: ":aGk=:"},
		{name: "at sign", in: "@x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sfParser{s: tt.in}
			got, ok := p.bare()
			if got != tt.want || ok != tt.ok {
				t.Fatalf("bare(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
			if rest := p.s[p.i:]; ok && rest != tt.wantRest {
				t.Errorf("bare(%q) left %q, want %q", tt.in, rest, tt.wantRest)
			}
		})
	}
}

func TestIsTokenChar(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{name: "letters and digits", in: "azAZ09", want: true},
		{name: "tchar punctuation", in: "!#$%&'*+-.^_`|~", want: true},
		{name: "colon and slash", in: ":/", want: true},
		{name: "separators", in: " \t,;=\"()<>@[]{}?\\"},
		{name: "control and non-ASCII", in: "\x00\x1f\x7f\x80\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < len(tt.in); i++ {
				if got := isTokenChar(tt.in[i]); got != tt.want {
					t.Errorf("isTokenChar(%q) = %v, want %v", tt.in[i], got, tt.want)
				}
			}
		})
	}
}
