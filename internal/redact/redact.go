// Package redact removes credentials from URLs, headers and free text before
// they reach logs, errors or the dead-letter table.
//
// Every function is pure and safe for concurrent use.
package redact

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "REDACTED"

// sensitiveWords are the words that make a query parameter or header name a credential's,
// wherever they stand in it: access_key, client_secret, api-key, apiKey, Private-Token,
// X-Amz-Signature, Authorization. Names are cut into words at _ - . and at camelCase.
var sensitiveWords = map[string]bool{
	"key": true, "apikey": true, "accesskey": true, "secretkey": true, "privatekey": true,
	"token": true, "accesstoken": true, "authtoken": true, "apitoken": true, "privatetoken": true, "sessiontoken": true, "idtoken": true, "refreshtoken": true,
	"secret": true, "clientsecret": true, "password": true, "passwd": true, "pwd": true, "passphrase": true,
	"signature": true, "sig": true, "credential": true, "credentials": true,
	"auth": true, "authorization": true, "cookie": true, "session": true, "sessionid": true,
}

// sensitiveName reports whether a parameter or header name carries a credential: one of
// its words is a sensitive word (so monkey and keyword are not, access_key and
// X-Api-Key are).
func sensitiveName(name string) bool {
	var word []rune
	prevLower := false
	check := func() bool {
		ok := len(word) > 0 && sensitiveWords[string(word)]
		word = word[:0]
		return ok
	}
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			if check() {
				return true
			}
			prevLower = false
			continue
		case r >= 'A' && r <= 'Z':
			if prevLower && check() {
				return true
			}
			r += 'a' - 'A'
			prevLower = false
		default:
			prevLower = r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		}
		word = append(word, r)
	}
	if check() {
		return true
	}
	// The whole name, separators dropped: "API_KEY", "Api-Token", "ACCESSTOKEN".
	flat := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' {
			return -1
		}
		return r
	}, strings.ToLower(name))
	return sensitiveWords[flat]
}

// SensitiveName reports whether a name (a parameter, a header, an environment
// variable) carries a credential: one of its words is key, token, secret, password,
// signature, auth and the like (TENANT_TOKEN, apiKey and X-Api-Key are; monkey and
// keyword are not).
func SensitiveName(name string) bool { return sensitiveName(name) }

// maskForms masks each of forms (longest first, as Forms gives them) where it stands as
// a token of its own.
func maskForms(s string, forms []string) string {
	for _, f := range forms {
		s = replaceToken(s, f)
	}
	return s
}

// sensitiveParam reports whether a query parameter carries a credential: an API key or
// token, or the signature and credentials of a presigned object-store URL (AWS S3
// X-Amz-*, Google Cloud Storage X-Goog-*, an Azure SAS token's sig), which STAC catalogues
// hand out as asset hrefs and which grant access until they expire.
func sensitiveParam(name string) bool { return sensitiveName(name) }

// sensitiveHeader reports whether a header carries a credential.
func sensitiveHeader(name string) bool { return sensitiveName(name) }

// URL returns s with the password of its userinfo (or its user name, when it has no
// password: http://TOKEN@host carries a token there) and the values of the query
// parameters whose names carry a credential (key, token, secret, password, signature and
// their kin, as in access_key, client_secret, api-key, apiKey, X-Amz-Signature; compared
// case-insensitively) replaced by Mask. The order of the parameters is kept. A string
// that does not parse as a URL is redacted as free text by String, so a secret never
// slips through a parse error.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return String(s)
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else if u.User.Username() != "" {
			u.User = url.User(Mask)
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

var (
	// paramRe finds credential-carrying query parameters inside free text, such as a URL
	// echoed back in a server's error page: a name made of words one of which is
	// sensitive, then "=".
	paramRe = regexp.MustCompile(`(?i)\b([a-z0-9_.-]*?(?:key|token|secret|password|passwd|pwd|passphrase|signature|sig|credentials?))=([^&\s"'<>]+)`)
	// userinfoRe finds "scheme://user:password@" inside free text.
	userinfoRe = regexp.MustCompile(`(://[^/\s:@]*):[^/\s@]*@`)
	// tokenUserRe finds "scheme://token@" (a user name and no password) inside free text.
	tokenUserRe = regexp.MustCompile(`(://)[^/\s:@]+@`)
	// bearerRe finds HTTP authorization credentials inside free text.
	bearerRe = regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{4,}`)
)

// minSecret is the shortest secret String masks wherever it stands: a shorter one (a
// password "e") would be found inside ordinary words, and masking it there would show it.
const minSecret = 4

// String returns s with each secret (of minSecret characters or more), in each of its
// Forms, masked where it stands as a token of its own, not inside a longer word, and
// with credentials that look like query parameters, URL userinfo or Bearer/Basic tokens
// masked by their position. Use it on response bodies and messages that may echo a
// request back.
func String(s string, secrets ...string) string {
	return positional(maskForms(s, Forms(secrets...)))
}

// positional masks the credentials text holds by their position: the values of
// credential parameters, URL userinfo, Bearer and Basic tokens.
func positional(s string) string {
	s = paramRe.ReplaceAllString(s, "${1}="+Mask)
	s = userinfoRe.ReplaceAllString(s, "${1}:"+Mask+"@")
	s = tokenUserRe.ReplaceAllString(s, "${1}"+Mask+"@")
	s = bearerRe.ReplaceAllString(s, "${1} "+Mask)
	return s
}

// replaceToken masks the occurrences of sec in s that no letter or digit continues on
// either side: where sec begins (or ends) with a letter or a digit, the byte before
// (after) it must not be one, so that "geoflow" is not masked inside "geoflowadmin".
func replaceToken(s, sec string) string {
	if !strings.Contains(s, sec) {
		return s
	}
	firstWord, lastWord := alnum(sec[0]), alnum(sec[len(sec)-1])
	var b strings.Builder
	last := 0
	for from := 0; ; {
		j := strings.Index(s[from:], sec)
		if j < 0 {
			break
		}
		i, end := from+j, from+j+len(sec)
		// An escape such as %3D before it (an echoed, percent-encoded URL) is a
		// boundary too, though it ends in a letter or digit.
		left := !firstWord || i == 0 || !alnum(s[i-1]) || (i >= 3 && s[i-3] == '%' && hex(s[i-2]) && hex(s[i-1]))
		if !left || lastWord && end < len(s) && alnum(s[end]) {
			from = i + 1
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(Mask)
		last, from = end, end
	}
	b.WriteString(s[last:])
	return b.String()
}

func hex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Secrets returns the credential values found in u (the userinfo password and
// the values of sensitive query parameters, raw and unescaped) and in the
// sensitive headers of h, for use with String. Either argument may be nil.
func Secrets(u *url.URL, h http.Header) []string {
	var out []string
	if u != nil {
		if u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				// The client sends the pair as a Basic credential, which a server may echo.
				out = append(out, p, u.User.Username()+":"+p)
			} else if !ok && u.User.Username() != "" {
				out = append(out, u.User.Username())
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
				out = append(out, basicPassword(f)...)
			}
		}
	}
	return out
}

// basicPassword is the "user:password" pair and the password of a Basic credential's
// fields ("Basic dXNlcjpwdw=="), which a server may echo decoded.
func basicPassword(f []string) []string {
	if len(f) != 2 || !strings.EqualFold(f[0], "Basic") {
		return nil
	}
	dec, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return nil
	}
	pair := string(dec)
	if _, pw, ok := strings.Cut(pair, ":"); ok && pw != "" {
		return []string{pair, pw}
	}
	return nil
}
