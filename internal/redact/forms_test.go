package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"html"
	htmltemplate "html/template"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// encodings are the ways a secret reaches text geoflow stores or prints, each written
// with the standard library's own encoder (or, for the named entities, as libxml2 and
// Java write them), not with Forms: the test checks Forms against the real writers.
var encodings = []struct {
	name string
	enc  func(string) string
}{
	{"raw", func(s string) string { return s }},
	{"query escape (+ for space)", url.QueryEscape},
	{"query escape, lower-case hex", func(s string) string { return lowerEscapes(url.QueryEscape(s)) }},
	{"path escape", url.PathEscape},
	{"path escape, lower-case hex", func(s string) string { return lowerEscapes(url.PathEscape(s)) }},
	{"url.Values.Encode", func(s string) string { return strings.TrimPrefix(url.Values{"k": {s}}.Encode(), "k=") }},
	{"a URL's String, its query re-encoded", func(s string) string {
		u := url.URL{Scheme: "https", Host: "h", Path: "/wfs", RawQuery: url.Values{"apikey": {s}}.Encode()}
		return strings.TrimPrefix(u.String(), "https://h/wfs?apikey=")
	}},
	{"a URL quoted in a URL", func(s string) string { return url.QueryEscape(url.QueryEscape(s)) }},
	{"JSON (Go, HTML-safe)", func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }},
	{"JSON, not HTML-safe", func(s string) string {
		var buf bytes.Buffer
		e := json.NewEncoder(&buf)
		e.SetEscapeHTML(false)
		_ = e.Encode(s)
		return strings.TrimSuffix(buf.String(), "\n")[1 : buf.Len()-2]
	}},
	{`JSON with \/`, func(s string) string {
		b, _ := json.Marshal(s)
		return strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`)
	}},
	{"html.EscapeString", html.EscapeString},
	{"html/template text", func(s string) string {
		var buf bytes.Buffer
		_ = htmltemplate.Must(htmltemplate.New("").Parse(`{{.}}`)).Execute(&buf, s)
		return buf.String()
	}},
	{"html/template of a percent-encoded URL", func(s string) string {
		var buf bytes.Buffer
		_ = htmltemplate.Must(htmltemplate.New("").Parse(`{{.}}`)).Execute(&buf, url.QueryEscape(s))
		return buf.String()
	}},
	{"xml.EscapeText", func(s string) string { var buf bytes.Buffer; _ = xml.EscapeText(&buf, []byte(s)); return buf.String() }},
	{"named XML entities", strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace},
}

var escapeRe = regexp.MustCompile(`%[0-9A-F]{2}`)

func lowerEscapes(s string) string { return escapeRe.ReplaceAllStringFunc(s, strings.ToLower) }

// The secrets of real flows: a SAS-like token, a key with & and a space, a base64 key,
// a password with every character markup escapes.
var shapedSecrets = []string{
	"ab/cd+ef==SECRETHHHH8888:x",
	"k&y/SECRET+FFFF6666=x y",
	"sv=2021-08-06&sig=uK/x3D+abc==",
	`p"a<s>s'w&rd\9`,
	"tab\tnew\nline-SECRET",
	"ünïcode-SECRET-ключ",
}

func TestEveryEncodingMasked(t *testing.T) {
	for _, secret := range shapedSecrets {
		for _, e := range encodings {
			enc := e.enc(secret)
			for _, wrap := range []string{"error near %s in request", "apikey=%s&x=1", `{"url":"%s"}`, "%s"} {
				text := strings.Replace(wrap, "%s", enc, 1)
				want := strings.Replace(wrap, "%s", Mask, 1)
				if got := tokens(text, secret); got != want {
					t.Errorf("%s of %q in %q:\n got %q\nwant %q", e.name, secret, text, got, want)
				}
			}
		}
	}
}

func TestBasicCredentialMasked(t *testing.T) {
	pair := "alice:pa ss/w&rd"
	for _, enc := range []string{
		base64.StdEncoding.EncodeToString([]byte(pair)),
		base64.RawStdEncoding.EncodeToString([]byte(pair)),
		base64.URLEncoding.EncodeToString([]byte(pair)),
	} {
		text := "WWW-Authenticate failed for Basic " + enc + "."
		if got := tokens(text, pair); strings.Contains(got, enc) {
			t.Errorf("the Basic credential %s was not masked: %q", enc, got)
		}
	}
	// Secrets finds the pair in a URL's userinfo and in a Basic header.
	u, _ := url.Parse("https://alice:pa%20ss@h/")
	h := map[string][]string{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("bob:hunter22"))}}
	got := strings.Join(Secrets(u, h), "|")
	for _, want := range []string{"alice:pa ss", "bob:hunter22", "hunter22"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets = %q, missing %q", got, want)
		}
	}
}

func TestSetMasksEveryForm(t *testing.T) {
	var s Set
	s.Add("k&y/SECRET+FFFF6666=x y")
	var buf strings.Builder
	log := slog.New(s.Handler(slog.NewJSONHandler(&buf, nil)))
	log.Info("GET https://h/wfs?apikey=k%26y%2FSECRET%2BFFFF6666%3Dx+y failed",
		"body", `{"echo":"k\u0026y/SECRET+FFFF6666=x y"}`, "page", "k&amp;y/SECRET&#43;FFFF6666=x y")
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("a form of the secret reached the log:\n%s", buf.String())
	}
	if got := s.String("at k%26y%2fSECRET%2bFFFF6666%3dx%20y."); got != "at REDACTED." {
		t.Errorf("Set.String = %q", got)
	}
}

func TestFormsLeaveWordsAlone(t *testing.T) {
	// A secret made of a word is masked as a word, never inside a longer one; one that
	// starts or ends with punctuation is masked however its neighbours look.
	for text, want := range map[string]string{
		"user geoflowadmin denied":    "user geoflowadmin denied",
		"user geoflow denied":         "user REDACTED denied",
		"map=x/geoflow+1":             "map=x/REDACTED+1",
		"path x/tok+en== y":           "path xREDACTED y",
		"geoflowgeoflow and geoflow.": "geoflowgeoflow and REDACTED.",
	} {
		if got := tokens(text, "geoflow", "/tok+en=="); got != want {
			t.Errorf("tokens(%q) = %q, want %q", text, got, want)
		}
	}
}

// FuzzFormsMasked hides a secret in one of the encodings inside random text: the text
// around it stays as it was, and no form of the secret is left.
func FuzzFormsMasked(f *testing.F) {
	f.Add("k&y/SECRET+FFFF6666=x y", uint8(1), "GET /wfs?apikey=", "&typename=x")
	f.Add("ab/cd+ef==SECRETHHHH8888:x", uint8(7), `{"error":"`, `"}`)
	f.Add(`p"a<s>s'w&rd`, uint8(12), "<td>", "</td>")
	f.Add("alice:pa ss", uint8(3), "Basic ", "")
	f.Fuzz(func(t *testing.T, secret string, which uint8, prefix, suffix string) {
		const sep = "\x01"
		// A secret comes from the environment, which holds no NUL byte.
		if len(secret) < minSecret || strings.ContainsAny(secret, sep+"\x00") || !utf8.ValidString(secret) || strings.Contains(Mask, secret) {
			return
		}
		enc := encodings[int(which)%len(encodings)].enc(secret)
		forms := Forms(secret)
		for _, form := range forms {
			if strings.Contains(prefix, form) || strings.Contains(suffix, form) || strings.Contains(Mask, form) {
				return
			}
		}
		text := prefix + sep + enc + sep + suffix
		want := prefix + sep + Mask + sep + suffix
		if got := tokens(text, secret); got != want {
			t.Fatalf("tokens(%q, %q):\n got %q\nwant %q", text, secret, got, want)
		}
	})
}

// tokens masks secrets in s in each of their forms, and nothing by position: what a Set
// of them does to a log line (a Set also leaves numbers alone).
func tokens(s string, secrets ...string) string { return maskForms(s, Forms(secrets...)) }
