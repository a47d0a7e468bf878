package redact

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "no secrets", in: "https://example.com/wfs?service=WFS&count=10", want: "https://example.com/wfs?service=WFS&count=10"},
		{name: "password in userinfo", in: "https://bob:hunter2@example.com/x", want: "https://bob:REDACTED@example.com/x"},
		{name: "a user name alone is a token", in: "http://TOKEN123@example.com/x", want: "http://REDACTED@example.com/x"},
		{name: "keys named otherwise", in: "https://e.com/t?access_key=a&client_secret=b&api-key=c&apiKey=d&X-Api-Token=e&sessionToken=f&typeNames=g&sortKey=h",
			want: "https://e.com/t?access_key=REDACTED&client_secret=REDACTED&api-key=REDACTED&apiKey=REDACTED&X-Api-Token=REDACTED&sessionToken=REDACTED&typeNames=g&sortKey=REDACTED"},
		{name: "api key", in: "https://e.com/t?apikey=abc123&z=1", want: "https://e.com/t?apikey=REDACTED&z=1"},
		{name: "case-insensitive names", in: "https://e.com/t?API_KEY=a&Token=b&ACCESS_TOKEN=c", want: "https://e.com/t?API_KEY=REDACTED&Token=REDACTED&ACCESS_TOKEN=REDACTED"},
		{name: "every listed name", in: "https://e.com/?key=1&password=2&secret=3&signature=4", want: "https://e.com/?key=REDACTED&password=REDACTED&secret=REDACTED&signature=REDACTED"},
		{name: "order kept", in: "https://e.com/?b=1&key=2&a=3", want: "https://e.com/?b=1&key=REDACTED&a=3"},
		{name: "escaped name", in: "https://e.com/?api%5Fkey=x", want: "https://e.com/?api%5Fkey=REDACTED"},
		{name: "AWS presigned URL", in: "https://b.s3.amazonaws.com/a.tif?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA1%2F2024&X-Amz-Security-Token=FwoG&X-Amz-Signature=9f3e",
			want: "https://b.s3.amazonaws.com/a.tif?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"},
		{name: "Azure SAS token", in: "https://a.blob.core.windows.net/c/a.tif?st=2024&se=2025&sp=rl&sv=2021&sr=c&sig=uK%2Fx3D",
			want: "https://a.blob.core.windows.net/c/a.tif?st=2024&se=2025&sp=rl&sv=2021&sr=c&sig=REDACTED"},
		{name: "GCS signed URL", in: "https://storage.googleapis.com/b/a.tif?X-Goog-Credential=sa%2F2024&X-Goog-Signature=abcd",
			want: "https://storage.googleapis.com/b/a.tif?X-Goog-Credential=REDACTED&X-Goog-Signature=REDACTED"},
		{name: "similar names untouched", in: "https://e.com/?keyword=x&monkey=y", want: "https://e.com/?keyword=x&monkey=y"},
		{name: "unparsable falls back to text", in: "http://[::1%zz/?token=abc", want: "http://[::1%zz/?token=REDACTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URL(tt.in); got != tt.want {
				t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{name: "explicit secret", in: "denied for abcdef", secrets: []string{"abcdef"}, want: "denied for REDACTED"},
		{name: "empty secret ignored", in: "abc", secrets: []string{""}, want: "abc"},
		{name: "echoed url", in: `<a href="https://e.com/?key=zzz&x=1">`, want: `<a href="https://e.com/?key=REDACTED&x=1">`},
		{name: "userinfo in text", in: "fetch ftp://u:pw@h/ failed", want: "fetch ftp://u:REDACTED@h/ failed"},
		{name: "bearer", in: "Authorization: Bearer eyJhbGciOi.x", want: "Authorization: Bearer REDACTED"},
		{name: "echoed SAS signature", in: `BlobNotFound: https://a.blob.core.windows.net/c/x?sv=2021&sig=uK%2Fx3D`, want: `BlobNotFound: https://a.blob.core.windows.net/c/x?sv=2021&sig=REDACTED`},
		{name: "nothing to do", in: "plain text", want: "plain text"},
		// By position, never by substring: a password "e" or "geoflow" does not mask
		// the words it hides in.
		{name: "short secret not masked inside words", in: "failed to connect to server", secrets: []string{"e"}, want: "failed to connect to server"},
		{name: "secret inside a longer word kept", in: "user geoflowadmin denied", secrets: []string{"geoflow"}, want: "user geoflowadmin denied"},
		{name: "secret as a token of its own", in: "bad key s3cr3tK3y; retry", secrets: []string{"s3cr3tK3y"}, want: "bad key REDACTED; retry"},
		{name: "echoed keys named otherwise", in: "GET /wfs?access_key=A1B2&client_secret=xyz&api-key=k9 failed", want: "GET /wfs?access_key=REDACTED&client_secret=REDACTED&api-key=REDACTED failed"},
		{name: "a secret echoed percent-encoded", in: "ExceptionText: GetFeature%3Fapikey%3Ds3cr3tKEY9%26x%3D1 failed", secrets: []string{"s3cr3tKEY9"},
			want: "ExceptionText: GetFeature%3Fapikey%3DREDACTED%26x%3D1 failed"},
		{name: "run-together names in text", in: "GET /x?sessionToken=abcd1234&idToken=efgh5678&passphrase=ijkl", want: "GET /x?sessionToken=REDACTED&idToken=REDACTED&passphrase=REDACTED"},
		{name: "token user in text", in: "dial http://ghp_abcdef@git.example/x: refused", want: "dial http://REDACTED@git.example/x: refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in, tt.secrets...); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSensitiveHeaders(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true, "X-Api-Key": true,
		"Api-Token": true, "Apikey": true, "Private-Token": true, "X-Auth-Token": true, "X-Amz-Security-Token": true,
		"Accept": false, "Keep-Alive": false, "Content-Type": false, "If-None-Match": false, "User-Agent": false, "X-Monkey": false,
	} {
		if got := sensitiveHeader(name); got != want {
			t.Errorf("sensitiveHeader(%q) = %v, want %v", name, got, want)
		}
	}
	h := http.Header{"Api-Token": {"tok-abcdef"}, "Private-Token": {"glpat-123456"}}
	got := strings.Join(Secrets(nil, h), ",")
	if !strings.Contains(got, "tok-abcdef") || !strings.Contains(got, "glpat-123456") {
		t.Errorf("Secrets of configured headers = %q", got)
	}
}

func TestSecrets(t *testing.T) {
	u, _ := url.Parse("https://u:pw9@e.com/?token=a%2Fb&x=1")
	h := http.Header{"Authorization": {"Bearer tok123"}}
	got := strings.Join(Secrets(u, h), ",")
	for _, want := range []string{"pw9", "a%2Fb", "a/b", "tok123"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets = %q, missing %q", got, want)
		}
	}
	if strings.Contains(got, "1") && strings.Contains(got, ",1") {
		t.Errorf("Secrets included a non-secret value: %q", got)
	}
}

func FuzzURL(f *testing.F) {
	f.Add("https://u:p@e.com/?key=abc&x=1")
	f.Add("http://[::1%zz/?token=abc")
	f.Fuzz(func(t *testing.T, s string) {
		out := URL(s)
		u, err := url.Parse(s)
		if err != nil || u.User == nil {
			return
		}
		if p, ok := u.User.Password(); ok && len(p) > 3 && p != Mask && strings.Contains(out, ":"+p+"@") {
			t.Errorf("URL(%q) = %q still holds the password", s, out)
		}
	})
}

func TestSetMasksEverywhere(t *testing.T) {
	var s Set
	s.Add("s3cr3t-token", "abc") // "abc" is too short to mask safely
	var buf strings.Builder
	log := slog.New(s.Handler(slog.NewTextHandler(&buf, nil))).With("flow", "uses s3cr3t-token")
	log.Info("GET http://h/wfs?map=s3cr3t-token failed", "err", errors.New("server said s3cr3t-token"),
		"url", "http://h/x/s3cr3t-token/y", slog.Group("g", "v", "s3cr3t-token"), "n", 3, "word", "abcdef")
	out := buf.String()
	if strings.Contains(out, "s3cr3t-token") || strings.Count(out, Mask) != 5 {
		t.Errorf("a secret reached the log, or was not masked in each of its 5 places:\n%s", out)
	}
	if !strings.Contains(out, "abcdef") || !strings.Contains(out, "n=3") {
		t.Errorf("text that is no secret was changed:\n%s", out)
	}
	var nilSet *Set
	if got := nilSet.String("a s3cr3t-token"); got != "a s3cr3t-token" {
		t.Errorf("a nil set masked %q", got)
	}
}
