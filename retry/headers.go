package retry

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Magnitudes that tell the forms of a bare number apart. A server that sends
// Retry-After: 120000 does not mean 33 hours: integers of 100000 and more are
// read as milliseconds (100000ms = 100s; a real delay-seconds value that
// large, over a day, is capped by MaxServerDelay anyway), except values that
// can only be Unix times (>= 1e9 seconds, >= 1e12 milliseconds, i.e. after
// 2001), which are read as the instant to come back.
const (
	msThreshold      = 100_000
	epochSecondsMin  = 1e9
	epochSecondsMax  = 1e11
	epochMillisMin   = 1e12
	epochMillisMax   = 1e14
	absurdNumber     = 1e15
	maxSecondsToWait = float64(math.MaxInt64/int64(time.Second)) / 2
)

// parseRetryAfter reads a Retry-After value: delay-seconds (also decimal),
// an HTTP-date in any of the three forms of RFC 9110 (IMF-fixdate, RFC 850,
// asctime), milliseconds or a Unix time told apart by magnitude (see
// msThreshold). Negative, empty and malformed values give ok false. A date in
// the past gives 0.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDecimal(v) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f >= absurdNumber {
			return 0, false
		}
		switch {
		case f >= epochMillisMin && f < epochMillisMax:
			return untilNonNeg(time.UnixMilli(int64(f)), now), true
		case f >= epochSecondsMin && f < epochSecondsMax:
			return untilNonNeg(time.Unix(int64(f), 0), now), true
		case f >= msThreshold:
			return secondsToDuration(f / 1000), true
		}
		return secondsToDuration(f), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return untilNonNeg(t, now), true
}

// parseRetryAfterMillis reads the integer milliseconds of Retry-After-Ms and
// X-Ms-Retry-After-Ms, which some cloud APIs send beside or instead of
// Retry-After.
func parseRetryAfterMillis(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if !isDecimal(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f >= absurdNumber {
		return 0, false
	}
	return secondsToDuration(f / 1000), true
}

// parseReset reads an X-RateLimit-Reset value into the instant the quota
// resets: epoch milliseconds (>= 1e12), epoch seconds (>= 1e9), seconds to
// go (smaller numbers, decimals allowed), a Go duration ("6m0s", "1.5s") or
// an HTTP-date. Malformed or negative values give ok false.
func parseReset(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if !isDecimal(v) {
		if t, err := http.ParseTime(v); err == nil {
			return t, true
		}
		d, ok := parseGoDuration(v)
		if !ok {
			return time.Time{}, false
		}
		return now.Add(d), true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f >= absurdNumber {
		return time.Time{}, false
	}
	switch {
	case f >= epochMillisMin:
		return time.UnixMilli(int64(f)), true
	case f >= epochSecondsMin:
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), true
	}
	return now.Add(secondsToDuration(f)), true
}

// absoluteReset tells whether a reset value parseReset accepts names an instant
// (epoch seconds or milliseconds, an HTTP-date) rather than a time to go.
func absoluteReset(v string) bool {
	v = strings.TrimSpace(v)
	if !isDecimal(v) {
		_, err := http.ParseTime(v)
		return err == nil
	}
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f >= epochSecondsMin && f < absurdNumber
}

// parseDelta reads seconds to go (decimals allowed) or a Go duration, the
// forms of X-RateLimit-Reset-After, RateLimit-Reset and the IETF t and w
// parameters.
func parseDelta(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if !isDecimal(v) {
		return parseGoDuration(v)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f >= absurdNumber {
		return 0, false
	}
	return secondsToDuration(f), true
}

// parseGoDuration accepts only non-negative durations with a unit.
func parseGoDuration(v string) (time.Duration, bool) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || !strings.ContainsAny(v, "hmsuµn") {
		return 0, false
	}
	return d, true
}

// parseLimit reads an X-RateLimit-Limit or RateLimit-Limit value: an integer,
// optionally followed by quota policies as in "100, 100;w=60" (the window of
// the first policy is returned; 0 when absent).
func parseLimit(v string) (int, time.Duration, bool) {
	head, rest, _ := strings.Cut(strings.TrimSpace(v), ",")
	n, ok := parseCount(head)
	if !ok || n == 0 {
		return 0, 0, false
	}
	var window time.Duration
	if rest != "" {
		if items, ok := parseSFList(rest); ok && len(items) > 0 {
			for _, key := range []string{"w", "window"} {
				if w, ok := items[0].params[key]; ok {
					if d, ok := parseDelta(w); ok && d > 0 {
						window = d
					}
				}
			}
		}
	}
	return n, window, true
}

// parseCount reads a non-negative integer count. A negative count, which
// some servers send once over quota, is read as 0.
func parseCount(v string) (int, bool) {
	v = strings.TrimSpace(v)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	if n < 0 {
		return 0, true
	}
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return int(n), true
}

func isDecimal(v string) bool {
	if v == "" {
		return false
	}
	dots := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && i > 0 && i < len(v)-1:
			dots++
		default:
			return false
		}
	}
	return dots <= 1
}

func secondsToDuration(f float64) time.Duration {
	if f > maxSecondsToWait {
		f = maxSecondsToWait
	}
	return time.Duration(f * float64(time.Second))
}

func untilNonNeg(t, now time.Time) time.Duration {
	return max(t.Sub(now), 0)
}

// sfItem is one member of a structured-field list (RFC 8941): a bare item
// (string, token or number) with parameters. Parameter values are kept as
// text; a parameter without a value is "?1".
type sfItem struct {
	name   string
	params map[string]string
}

// parseSFList parses the subset of RFC 8941 lists that rate-limit headers
// use. Inner lists and byte sequences are refused; so is anything malformed.
func parseSFList(s string) ([]sfItem, bool) {
	p := sfParser{s: s}
	var out []sfItem
	p.skipSpace()
	if p.done() {
		return nil, false
	}
	for {
		item, ok := p.item()
		if !ok {
			return nil, false
		}
		out = append(out, item)
		p.skipSpace()
		if p.done() {
			return out, true
		}
		if !p.eat(',') {
			return nil, false
		}
		p.skipSpace()
		if p.done() {
			return nil, false // trailing comma
		}
	}
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) item() (sfItem, bool) {
	name, ok := p.bare()
	if !ok {
		return sfItem{}, false
	}
	it := sfItem{name: name, params: map[string]string{}}
	for {
		p.skipSpace()
		if !p.eat(';') {
			return it, true
		}
		p.skipSpace()
		key, ok := p.key()
		if !ok {
			return sfItem{}, false
		}
		val := "?1"
		if p.eat('=') {
			if val, ok = p.bare(); !ok {
				return sfItem{}, false
			}
		}
		it.params[key] = val
	}
}

func (p *sfParser) key() (string, bool) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c == '*' || p.i > start && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i], p.i > start
}

// bare reads a bare item (RFC 8941 section 3.3): a string, token, number or
// boolean, told apart by its first character, and returns its text (a string's
// unescaped). Byte sequences, dates and display strings are refused.
func (p *sfParser) bare() (string, bool) {
	if p.done() {
		return "", false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		return p.quoted()
	case c == '?':
		return p.boolean()
	case c == '-' || isDigit(c):
		return p.number()
	case isAlpha(c) || c == '*':
		return p.token()
	}
	return "", false
}

// quoted reads a string from its opening quote: printable ASCII, with \" and \\
// the only escapes.
func (p *sfParser) quoted() (string, bool) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", false
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return b.String(), true
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// boolean reads ?0 or ?1.
func (p *sfParser) boolean() (string, bool) {
	if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
		p.i += 2
		return p.s[p.i-2 : p.i], true
	}
	return "", false
}

// number reads an integer or decimal, optionally negative. It is laxer than RFC 8941
// about digits and dots, but what it returns always parses as a float.
func (p *sfParser) number() (string, bool) {
	start := p.i
	p.i++ // the sign or the first digit
	for p.i < len(p.s) && (isDigit(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	num := p.s[start:p.i]
	if _, err := strconv.ParseFloat(num, 64); err != nil || num == "-" {
		return "", false
	}
	return num, true
}

// token reads a token from its first character, a letter or '*', already checked.
func (p *sfParser) token() (string, bool) {
	start := p.i
	p.i++
	for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i], true
}

// isTokenChar tells whether c may follow a token's first character: a letter, a
// digit, or one of RFC 9110's tchar punctuation, ':' and '/'.
func isTokenChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte(":/!#$%&'*+-.^_`|~", c) >= 0
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// quotaObs is what one response says about the host's quota.
type quotaObs struct {
	limit     int           // requests per window; 0 unknown
	remaining int           // requests left in the window
	reset     time.Time     // when the window resets; zero unknown
	window    time.Duration // window length; 0 unknown
	// early is the earliest instant on our clock the window may end, when reset is
	// placed at the latest; zero when they are one.
	early time.Time
	// absolute says reset was sent as an instant (epoch seconds or milliseconds, an
	// HTTP-date), on the server's clock, rather than as seconds to go.
	absolute bool
}

// Header forms, as counted by the rate-limit-headers metric.
const (
	formRetryAfter = "retry_after"
	formXRateLimit = "x_ratelimit"
	formIETF       = "ietf"
	formIETFLegacy = "ietf_legacy"
)

// hints is what one response's headers say about pacing.
type hints struct {
	retryAfter    time.Duration
	hasRetryAfter bool
	quota         quotaObs
	hasQuota      bool
	forms         []string
}

// parseHints reads every rate-limit header form. Of the quota forms the IETF
// RateLimit/RateLimit-Policy pair wins, then the RateLimit-* triple, then
// X-RateLimit-*; Retry-After, when present, wins over all of them for the
// delay before coming back. Malformed fields are ignored.
func parseHints(h http.Header, now time.Time) hints {
	var out hints
	if v := h.Get("Retry-After"); v != "" {
		out.retryAfter, out.hasRetryAfter = parseRetryAfter(v, now)
	}
	if !out.hasRetryAfter {
		for _, name := range []string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
			if v := h.Get(name); v != "" {
				if out.retryAfter, out.hasRetryAfter = parseRetryAfterMillis(v); out.hasRetryAfter {
					break
				}
			}
		}
	}
	if out.hasRetryAfter {
		out.forms = append(out.forms, formRetryAfter)
	}
	if q, ok := parseIETF(h.Get("RateLimit"), h.Get("RateLimit-Policy"), now); ok {
		out.quota, out.hasQuota = q, true
		out.forms = append(out.forms, formIETF)
	} else if q, ok := parseTriple(h, "RateLimit-", now); ok {
		out.quota, out.hasQuota = q, true
		out.forms = append(out.forms, formIETFLegacy)
	} else if q, ok := parseTriple(h, "X-RateLimit-", now); ok {
		out.quota, out.hasQuota = q, true
		out.forms = append(out.forms, formXRateLimit)
	}
	return out
}

// parseTriple reads <prefix>Limit, <prefix>Remaining and <prefix>Reset (or
// <prefix>Reset-After). Remaining is required; the others are optional.
func parseTriple(h http.Header, prefix string, now time.Time) (quotaObs, bool) {
	var q quotaObs
	rem, ok := parseCount(h.Get(prefix + "Remaining"))
	if !ok {
		return q, false
	}
	q.remaining = rem
	if v := h.Get(prefix + "Limit"); v != "" {
		if n, w, ok := parseLimit(v); ok {
			q.limit, q.window = n, w
		}
	}
	if v := h.Get(prefix + "Reset-After"); v != "" {
		if d, ok := parseDelta(v); ok {
			q.reset = now.Add(d)
		}
	}
	if v := h.Get(prefix + "Reset"); v != "" && q.reset.IsZero() {
		if prefix == "RateLimit-" {
			// The IETF draft defines RateLimit-Reset as delta-seconds only.
			if d, ok := parseDelta(v); ok {
				q.reset = now.Add(d)
			}
		} else if t, ok := parseReset(v, now); ok {
			q.reset, q.absolute = t, absoluteReset(v)
		}
	}
	if q.limit > 0 && q.remaining > q.limit {
		q.limit = q.remaining
	}
	return q, true
}

// parseIETF reads the structured fields of draft-ietf-httpapi-ratelimit-headers:
// RateLimit: "name";r=50;t=30 with RateLimit-Policy: "name";q=100;w=60, and
// the older single-field dictionary RateLimit: limit=100, remaining=50, reset=30.
// With several quotas the one with the fewest requests remaining governs.
func parseIETF(rl, policy string, now time.Time) (quotaObs, bool) {
	if strings.TrimSpace(rl) == "" {
		return quotaObs{}, false
	}
	if q, ok := parseIETFDict(rl, now); ok {
		return q, true
	}
	items, ok := parseSFList(rl)
	if !ok {
		return quotaObs{}, false
	}
	best := -1
	var bestR int
	for i, it := range items {
		r, ok := parseCount(it.params["r"])
		if !ok {
			continue
		}
		if best < 0 || r < bestR {
			best, bestR = i, r
		}
	}
	if best < 0 {
		return quotaObs{}, false
	}
	q := quotaObs{remaining: bestR}
	if d, ok := parseDelta(items[best].params["t"]); ok {
		q.reset = now.Add(d)
	}
	if pols, ok := parseSFList(policy); ok && strings.TrimSpace(policy) != "" {
		var match *sfItem
		for i := range pols {
			if pols[i].name == items[best].name {
				match = &pols[i]
				break
			}
		}
		if match == nil && len(pols) == 1 {
			match = &pols[0]
		}
		if match != nil {
			if n, ok := parseCount(match.params["q"]); ok && n > 0 {
				q.limit = n
			}
			if w, ok := parseDelta(match.params["w"]); ok && w > 0 {
				q.window = w
			}
		}
	}
	if q.limit > 0 && q.remaining > q.limit {
		q.limit = q.remaining
	}
	return q, true
}

// parseIETFDict reads the draft-06 form "limit=100, remaining=50, reset=30".
func parseIETFDict(v string, now time.Time) (quotaObs, bool) {
	var q quotaObs
	seen := false
	for _, member := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok {
			return quotaObs{}, false
		}
		val, _, _ = strings.Cut(val, ";")
		switch strings.TrimSpace(k) {
		case "limit":
			n, ok := parseCount(val)
			if !ok {
				return quotaObs{}, false
			}
			q.limit = n
		case "remaining":
			n, ok := parseCount(val)
			if !ok {
				return quotaObs{}, false
			}
			q.remaining, seen = n, true
		case "reset":
			d, ok := parseDelta(val)
			if !ok {
				return quotaObs{}, false
			}
			q.reset = now.Add(d)
		default:
			return quotaObs{}, false
		}
	}
	if q.limit > 0 && q.remaining > q.limit {
		q.limit = q.remaining // as the structured form does: a server's remaining is what it will admit
	}
	return q, seen
}
