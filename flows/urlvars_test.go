package flows

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestURLVariablesArriveExactly: a ${VAR} in a URL reaches the server as exactly its
// value, whatever characters it holds, in a query value, a path segment or userinfo. A
// key with & and a space was split into two parameters (the server got the wrong key),
// and one with + and / was re-encoded so that + became a space.
func TestURLVariablesArriveExactly(t *testing.T) {
	const pathToken, key, user, pass = "ab/cd+ef==SECRETHHHH8888:x", "k&y/SECRET+FFFF6666=x y", "geo user", "p@ss:w/rd#1?"
	type got struct {
		seg, apikey, mapv, user, pass string
		params                        int
	}
	var seen got
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		seen.seg = strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/wfs"), "/t/")
		seen.apikey, seen.mapv, seen.params = q.Get("apikey"), q.Get("map"), len(q)
		seen.user, seen.pass, _ = r.BasicAuth()
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	src := "name: exact\ntasks:\n  a:\n    type: fake\n" +
		"    url: http://${WFS_USER}:${WFS_PASSWORD}@" + host + "/t/${PATH_TOKEN}/wfs?map=${PATH_TOKEN}&apikey=${WFS_KEY}&service=WFS\n"
	env := map[string]string{"PATH_TOKEN": pathToken, "WFS_KEY": key, "WFS_USER": user, "WFS_PASSWORD": pass}
	f, err := Parse("exact.yaml", []byte(src), Options{Registry: testRegistry(), LookupEnv: envOf(env)})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(f.Task("a").Config.(*testConfig).URL)
	if err != nil {
		t.Fatal(err)
	}
	// The client sends userinfo as a Basic credential, as every task's requests do.
	req, _ := http.NewRequest("GET", u.String(), nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	want := got{seg: pathToken, apikey: key, mapv: pathToken, user: user, pass: pass, params: 3}
	if seen != want {
		t.Errorf("the server received\n %+v\nwant\n %+v", seen, want)
	}
	// Every value is a secret (a credential's name, or userinfo), and so is the pair a
	// Basic credential carries.
	for _, s := range []string{pathToken, key, user, pass, user + ":" + pass} {
		if !contains(f.Secrets, s) {
			t.Errorf("Secrets = %q, missing %q", f.Secrets, s)
		}
	}
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestURLPart(t *testing.T) {
	for _, tt := range []struct {
		before, after string
		want          part
	}{
		{"", "/wfs", partURL},
		{"", "", partURL},
		{"http", "://h/x", partScheme},
		{"https://", "@h/x", partUserinfo},
		{"https://", ":pw@h/x", partUserinfo},
		{"https://u:", "@h/x", partUserinfo},
		{"https://", ".example.com/x", partHost},
		{"https://u@", "/x", partHost},
		{"https://h:", "/x", partHost},
		{"https://h/", "/wfs", partPath},
		{"https://h/a/b", "", partPath},
		{"tiles/", "/{z}", partPath},
		{"https://h/wfs?", "", partWholeQuery},
		{"https://h/wfs?", "#top", partWholeQuery},
		{"https://h/wfs?", "&x=1", partQuery},
		{"https://h/wfs?key=", "", partQuery},
		{"https://h/wfs?key=1&", "=v", partQuery},
		{"https://h/wfs#", "", partFragment},
		{"https://h/wfs?a=1#", "", partFragment},
	} {
		if got := urlPart(tt.before, tt.after); got != tt.want {
			t.Errorf("urlPart(%q, %q) = %v, want %v", tt.before, tt.after, got, tt.want)
		}
	}
}

func TestURLVariableRules(t *testing.T) {
	for _, tt := range []struct {
		name, url string
		env       map[string]string
		want      string // the expanded URL, or the error's words
		fails     bool
	}{
		{name: "a variable carries the whole URL", url: "${WFS_URL}", env: map[string]string{"WFS_URL": "https://h/wfs?map=/x.map&key=a%2Fb"},
			want: "https://h/wfs?map=/x.map&key=a%2Fb"},
		{name: "or its beginning", url: "${BASE}/wfs?typename=${LAYER}", env: map[string]string{"BASE": "https://h/svc", "LAYER": "ns:parcels"},
			want: "https://h/svc/wfs?typename=ns%3Aparcels"},
		{name: "or the whole query", url: "https://h/wfs?${QUERY}", env: map[string]string{"QUERY": "map=/x.map&key=a%2Fb"},
			want: "https://h/wfs?map=/x.map&key=a%2Fb"},
		{name: "a query with a # is refused", url: "https://h/wfs?${QUERY}", env: map[string]string{"QUERY": "a=1#x"},
			want: "${QUERY} carries the query after ? but holds a #", fails: true},
		{name: "a query with a bad escape is refused", url: "https://h/wfs?${QUERY}", env: map[string]string{"QUERY": "a=%zz"},
			want: "${QUERY} carries the query after ? but is no valid query", fails: true},
		{name: "a whole URL with a space is refused", url: "${WFS_URL}", env: map[string]string{"WFS_URL": "https://h/a b"},
			want: "${WFS_URL} carries the URL but holds a space", fails: true},
		{name: "a host from a variable", url: "https://${TENANT}.example.com:${PORT}/wfs", env: map[string]string{"TENANT": "acme-1", "PORT": "8443"},
			want: "https://acme-1.example.com:8443/wfs"},
		{name: "a host that would change the URL", url: "https://${TENANT}.example.com/wfs", env: map[string]string{"TENANT": "evil.com/x?"},
			want: `${TENANT} stands in the host of a URL but holds "/"`, fails: true},
		{name: "a default is the flow's own text", url: "https://h/wfs?map=${MAP:-/srv/a.map}", env: map[string]string{},
			want: "https://h/wfs?map=/srv/a.map"},
		{name: "a fragment", url: "https://h/x#${FRAG}", env: map[string]string{"FRAG": "a b"}, want: "https://h/x#a%20b"},
		{name: "unicode in a path", url: "https://h/${DIR}/wfs", env: map[string]string{"DIR": "straße"}, want: "https://h/stra%C3%9Fe/wfs"},
		{name: "a tile template keeps its placeholders", url: "https://t/{z}/{x}/{y}.png?key=${TILE_KEY}", env: map[string]string{"TILE_KEY": "a+b"},
			want: "https://t/{z}/{x}/{y}.png?key=a%2Bb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: r\ntasks:\n  a:\n    type: fake\n    url: \"" + tt.url + "\"\n"
			f, err := Parse("r.yaml", []byte(src), Options{Registry: testRegistry(), LookupEnv: envOf(tt.env)})
			if tt.fails {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "r.yaml:5") {
					t.Errorf("err = %v, want one at r.yaml:5 saying %q", err, tt.want)
				}
				for _, v := range tt.env {
					if err != nil && strings.Contains(err.Error(), v) {
						t.Errorf("the error quotes the value %q: %v", v, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Task("a").Config.(*testConfig).URL; got != tt.want {
				t.Errorf("url = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHeaderVariableCannotSplitTheHeader: a value with a line break would end the
// header and start another (header injection); it is refused where it is written.
func TestHeaderVariableCannotSplitTheHeader(t *testing.T) {
	src := "name: h\ntasks:\n  a:\n    type: fake\n    headers: {X-Api-Key: \"${API_KEY}\"}\n"
	_, err := Parse("h.yaml", []byte(src), Options{Registry: testRegistry(), LookupEnv: envOf(map[string]string{"API_KEY": "abcd\r\nX-Admin: 1"})})
	if err == nil || !strings.Contains(err.Error(), "h.yaml:5") || !strings.Contains(err.Error(), "line break") || strings.Contains(err.Error(), "X-Admin") {
		t.Errorf("err = %v; want one at h.yaml:5 about a line break, the value not quoted", err)
	}
	f, err := Parse("h.yaml", []byte(src), Options{Registry: testRegistry(), LookupEnv: envOf(map[string]string{"API_KEY": "k&y/=x y"})})
	if err != nil || f.Task("a").Config.(*testConfig).Headers["X-Api-Key"] != "k&y/=x y" {
		t.Errorf("a header takes its value as it is: %v %v", f, err)
	}
}

// FuzzURLVariable puts a random value in a path segment, a query value, userinfo or the
// fragment of a URL: the URL parses, and the part gives back exactly the value.
func FuzzURLVariable(f *testing.F) {
	f.Add("k&y/SECRET+FFFF6666=x y", uint8(1))
	f.Add("ab/cd+ef==SECRETHHHH8888:x", uint8(0))
	f.Add("p@ss:w/rd#1?", uint8(2))
	f.Add("%zz%2F", uint8(3))
	f.Fuzz(func(t *testing.T, val string, where uint8) {
		if val == "" {
			return
		}
		templates := []string{"https://h/a/${V}/b", "https://h/wfs?x=1&k=${V}&y=2", "https://u:${V}@h/", "https://h/x#${V}"}
		tpl := templates[int(where)%len(templates)]
		out, err := expandURL(tpl, func(string) (string, bool) { return val, true }, func(string, string, part) {})
		if err != nil {
			t.Fatalf("expandURL(%q) with %q: %v", tpl, val, err)
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("%q does not parse: %v", out, err)
		}
		var got string
		switch int(where) % len(templates) {
		case 0:
			got = strings.TrimSuffix(strings.TrimPrefix(u.EscapedPath(), "/a/"), "/b")
			got, err = url.PathUnescape(got)
		case 1:
			got = u.Query().Get("k")
			if len(u.Query()) != 3 {
				t.Errorf("%q has %d parameters, want 3", out, len(u.Query()))
			}
		case 2:
			got, _ = u.User.Password()
		case 3:
			got = u.Fragment
		}
		if err != nil || got != val || u.Host != "h" {
			t.Errorf("%q gives back %q (%v), host %q; want %q, host h", out, got, err, u.Host, val)
		}
	})
}
