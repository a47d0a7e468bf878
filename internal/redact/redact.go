// Package redact removes credentials from URLs, headers and free text before
// they reach logs, errors or the dead-letter table.
//
// Every function is pure and safe for concurrent use.
package redact

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "REDACTED"

// sensitiveParam reports whether a query parameter carries a credential: an API key or
// token, or the signature and credentials of a presigned object-store URL (AWS S3
// X-Amz-*, Google Cloud Storage X-Goog-*, an Azure SAS token's sig), which STAC catalogues
// hand out as asset hrefs and which grant access until they expire.
func sensitiveParam(name string) bool {
	switch strings.ToLower(name) {
	case "key", "token", "apikey", "api_key", "access_token", "password", "secret", "signature",
		"sig", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
		"x-goog-signature", "x-goog-credential":
		return true
	}
	return false
}

// sensitiveHeader reports whether a header carries a credential.
func sensitiveHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "X-Auth-Token":
		return true
	}
	return false
}

// URL returns s with the password of its userinfo and the values of the query
// parameters key, token, apikey, api_key, access_token, password, secret,
// signature and those of presigned object-store URLs (sig, X-Amz-Signature,
// X-Amz-Credential, X-Amz-Security-Token, X-Goog-Signature, X-Goog-Credential;
// compared case-insensitively) replaced by Mask. The order of the
// parameters is kept. A string that does not parse as a URL is redacted as
// free text by String, so a secret never slips through a parse error.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return String(s)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, _ := strings.Cut(p, "=")
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if sensitiveParam(name) {
				parts[i] = k + "=" + Mask
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.String()
}

// Header returns a copy of h in which the values of Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key and X-Auth-Token are
// replaced by Mask; the names stay so a reader sees they were sent. A nil h
// gives nil. h itself is not modified.
func Header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := h.Clone()
	for name, vals := range out {
		if !sensitiveHeader(name) {
			continue
		}
		masked := make([]string, len(vals))
		for i := range masked {
			masked[i] = Mask
		}
		out[name] = masked
	}
	return out
}

var (
	// paramRe finds credential-carrying query parameters inside free text,
	// such as a URL echoed back in a server's error page.
	paramRe = regexp.MustCompile(`(?i)\b(key|token|apikey|api_key|access_token|password|secret|signature|sig|credential)=([^&\s"'<>]+)`)
	// userinfoRe finds "scheme://user:password@" inside free text.
	userinfoRe = regexp.MustCompile(`(://[^/\s:@]*):[^/\s@]*@`)
	// bearerRe finds HTTP authorization credentials inside free text.
	bearerRe = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
)

// String returns s with every occurrence of each non-empty secret replaced by
// Mask, and with credentials that look like query parameters, URL userinfo
// passwords or Bearer/Basic tokens masked too. Use it on response bodies and
// messages that may echo a request back.
func String(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec == "" || sec == Mask {
			continue
		}
		s = strings.ReplaceAll(s, sec, Mask)
	}
	s = paramRe.ReplaceAllString(s, "${1}="+Mask)
	s = userinfoRe.ReplaceAllString(s, "${1}:"+Mask+"@")
	s = bearerRe.ReplaceAllString(s, "${1} "+Mask)
	return s
}

// Secrets returns the credential values found in u (the userinfo password and
// the values of sensitive query parameters, raw and unescaped) and in the
// sensitive headers of h, for use with String. Either argument may be nil.
func Secrets(u *url.URL, h http.Header) []string {
	var out []string
	if u != nil {
		if u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p)
			}
		}
		for _, p := range strings.Split(u.RawQuery, "&") {
			k, v, ok := strings.Cut(p, "=")
			if !ok || v == "" {
				continue
			}
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if !sensitiveParam(name) {
				continue
			}
			out = append(out, v)
			if uv, err := url.QueryUnescape(v); err == nil && uv != v {
				out = append(out, uv)
			}
		}
	}
	for name, vals := range h {
		if !sensitiveHeader(name) {
			continue
		}
		for _, v := range vals {
			// "Bearer abc": the credential is the last field.
			if f := strings.Fields(v); len(f) > 0 && len(f[len(f)-1]) >= 4 {
				out = append(out, f[len(f)-1])
			}
		}
	}
	return out
}
