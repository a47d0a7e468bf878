package redact

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Forms returns every form in which a secret may be written where geoflow stores or
// prints text, longest first and each once:
//
//   - as it is;
//   - percent-encoded as a query value (space as +), as a path segment (space as %20)
//     and with every byte but the unreserved ones escaped (how geoflow puts a ${VAR}
//     into a URL), each with upper- and lower-case hex digits, and the query and strict
//     forms encoded twice (a URL quoted inside another URL);
//   - base64 of a Basic credential: a secret "user:password" (geoflow adds the pair of a
//     URL's userinfo) in the standard and URL alphabets, padded or not;
//   - each of those JSON-escaped (Go's HTML-safe form, the plain one, and with \/ as
//     some encoders write it), HTML-escaped (html.EscapeString, and html/template's
//     text form that also escapes +) and XML-escaped (encoding/xml's numeric references
//     and the named &quot; and &apos; of other writers), once or twice (a JSON body
//     quoted in JSON or on a page).
//
// Secrets shorter than four bytes give no form: they would be found inside ordinary words.
func Forms(secrets ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range secrets {
		for _, f := range formsOf(s) {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// formCache keeps the forms of the secrets met lately: a flow's secrets and those of
// its requests are the same for every failure, and building them costs about 0.1 ms.
var formCache = struct {
	sync.Mutex
	m map[string][]string
}{m: map[string][]string{}}

// formCacheSize bounds formCache; it is emptied when full.
const formCacheSize = 1024

// formsOf is the forms of one secret, from formCache or built.
func formsOf(s string) []string {
	formCache.Lock()
	f, ok := formCache.m[s]
	formCache.Unlock()
	if ok {
		return f
	}
	f = buildForms(s)
	formCache.Lock()
	if len(formCache.m) >= formCacheSize {
		clear(formCache.m)
	}
	formCache.m[s] = f
	formCache.Unlock()
	return f
}

// buildForms is every form of s (Forms), each once.
func buildForms(s string) []string {
	if len(s) < minSecret || s == Mask {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if len(f) >= minSecret && f != Mask && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, b := range baseForms(s) {
		add(b)
		for _, e := range textForms(b) {
			add(e)
			// Text escaped twice: a JSON error body kept in a dead letter, then
			// served in the API's JSON or on a page.
			for _, e2 := range textForms(e) {
				add(e2)
			}
		}
	}
	return out
}

// baseForms are s and its encodings inside URLs and Basic credentials.
func baseForms(s string) []string {
	query, path, strict := url.QueryEscape(s), url.PathEscape(s), Escape(s)
	out := []string{s, query, lowerHex(query), path, lowerHex(path), strict, lowerHex(strict)}
	for _, twice := range []string{url.QueryEscape(query), Escape(strict)} {
		out = append(out, twice, lowerHex(twice))
	}
	if strings.Contains(s, ":") {
		b := []byte(s)
		out = append(out, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b))
	}
	return out
}

// textForms are s escaped for JSON, HTML and XML text; none when no escaper changes s.
func textForms(s string) []string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || strings.ContainsRune("\"&'<>+/\\\u2028\u2029\uFFFE\uFFFF", r) }) {
		return nil
	}
	var out []string
	if j, err := json.Marshal(s); err == nil {
		h := string(j[1 : len(j)-1])
		out = append(out, h, strings.ReplaceAll(h, "/", `\/`))
	}
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		p := strings.TrimSuffix(plain.String(), "\n")
		out = append(out, p[1:len(p)-1])
	}
	for _, r := range entityForms {
		out = append(out, r.Replace(s))
	}
	return out
}

// entityForms escape text for HTML and XML as the writers geoflow meets do.
var entityForms = []*strings.Replacer{
	// html.EscapeString and encoding/xml's attribute values.
	strings.NewReplacer(`&`, "&amp;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;"),
	// html/template in text and attributes.
	strings.NewReplacer(`&`, "&amp;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", `+`, "&#43;"),
	// encoding/xml EscapeText.
	xmlText(),
	// Named references (libxml2, Java, .NET).
	strings.NewReplacer(`&`, "&amp;", `'`, "&apos;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;"),
}

// xmlText escapes like encoding/xml's EscapeText, which writes a character XML cannot
// hold (a control character, U+FFFE, U+FFFF) as U+FFFD.
func xmlText() *strings.Replacer {
	pairs := []string{`&`, "&amp;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", "\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;",
		"\uFFFE", "\uFFFD", "\uFFFF", "\uFFFD"}
	for c := range byte(0x20) {
		if c != '\t' && c != '\n' && c != '\r' {
			pairs = append(pairs, string(rune(c)), "\uFFFD")
		}
	}
	return strings.NewReplacer(pairs...)
}

// Escape percent-encodes every byte of s but the unreserved ones (RFC 3986: letters,
// digits, - . _ ~), so that s means itself in any part of a URL: a path segment, a query
// name or value, userinfo, a fragment. Every server decodes it to s.
func Escape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return alnum(c) || c == '-' || c == '.' || c == '_' || c == '~'
}

// lowerHex writes the hex digits of s's percent escapes in lower case (%2f).
func lowerHex(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' && hex(b[i+1]) && hex(b[i+2]) {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
