package cli_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/internal/testdb"
)

// Secrets shaped like real ones (a SAS token, a key with & and a space, a header token
// with the characters markup and JSON escape, a Basic password), each holding a marker
// no encoding changes, so that counting the marker counts the secret in any encoding
// but base64 (counted apart).
const (
	pathToken  = "ab/cd+ef==SECRETHHHH8888:x"
	wfsKey     = "k&y/SECRET+FFFF6666=x y"
	hdrToken   = `tok/en+GGGG7777=&"<x>'`
	wfsUser    = "geo"
	wfsPass    = "pw+IIII9999="
	markerList = "HHHH8888 FFFF6666 GGGG7777 IIII9999"
)

// received is what the server was sent, by parameter.
type received struct {
	mu                          sync.Mutex
	apikey, mapv, header, basic []string
}

// echoingWFS is the sample WFS whose GetFeature answers 400 with an exception report
// quoting the request the way servers do (field notes: MapServer and GeoServer echo the
// query; API gateways echo the key JSON-escaped or URL-quoted; some echo the
// credential they were sent), after recording what it received.
func echoingWFS(t *testing.T, got *received) *httptest.Server {
	inner := wfsserver.New(wfsserver.Options{Features: 2000})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.URL.Query().Get("REQUEST"), "GetFeature") || strings.EqualFold(r.URL.Query().Get("RESULTTYPE"), "hits") {
			inner.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		_, auth, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		got.mu.Lock()
		got.apikey, got.mapv = append(got.apikey, q.Get("apikey")), append(got.mapv, q.Get("map"))
		got.header, got.basic = append(got.header, r.Header.Get("X-Api-Token")), append(got.basic, auth)
		got.mu.Unlock()
		j, _ := json.Marshal(r.Header.Get("X-Api-Token"))
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0"><ows:Exception exceptionCode="InvalidParameterValue">`+
			`<ows:ExceptionText>refused %s; token %s quoted %s; map %s; credential %s</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`,
			r.URL.RawQuery, j, url.QueryEscape(r.Header.Get("X-Api-Token")), q.Get("map"), auth)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSecretsInEveryEncoding: a flow's secrets reach the server exactly and no sink
// holds them in any encoding: the store (pg_dump of the database, the GeoPackage's
// bytes), the JSON log, runs show --json, dlq list and show --json, GET /api/dlq and
// the /dlq page. A key with & was split into two parameters (the server got the wrong
// key); the re-encoded forms of a key, and a header token echoed JSON-escaped or
// URL-quoted, reached dead letters, logs, the API and the pages.
func TestSecretsInEveryEncoding(t *testing.T) { eachStore(t, testSecretsInEveryEncoding) }

func testSecretsInEveryEncoding(t *testing.T, db string) {
	var got received
	srv := echoingWFS(t, &got)
	host := strings.TrimPrefix(srv.URL, "http://")
	flow := writeFlow(t, `name: leaky
tasks:
  a:
    type: wfs
    url: http://`+wfsUser+`:${WFS_PASSWORD}@`+host+`/?map=${PATH_TOKEN}&apikey=${WFS_KEY}
    headers: {X-Api-Token: "${HDR_TOKEN}"}
    typename: parcels
    page_size: 200
    retry: {max_attempts: 2, base_delay: 1ms}
    target: {table: leaky}
`)
	env := map[string]string{"PATH_TOKEN": pathToken, "WFS_KEY": wfsKey, "HDR_TOKEN": hdrToken, "WFS_PASSWORD": wfsPass}
	code, _, logs := geoflow(t, env, "--log-format", "json", "run", flow, "--database", db)
	if code == 0 {
		t.Fatalf("the run succeeded against a server that refuses every GetFeature:\n%s", logs)
	}
	checkReceived(t, &got)

	sinks := map[string]string{"JSON log": logs}
	_, sinks["runs show --json"], _ = geoflow(t, nil, "runs", "show", "1", "--json", "--database", db)
	_, sinks["dlq list --json"], _ = geoflow(t, nil, "dlq", "list", "--json", "--database", db)
	_, sinks["dlq show --json"], _ = geoflow(t, nil, "dlq", "show", "1", "--json", "--database", db)
	ctx, cancel := context.WithCancel(context.Background())
	base, _, done := startUI(t, ctx, "ui", "--database", db, "--listen", "127.0.0.1:0")
	sinks["GET /api/dlq"] = httpGet(t, base+"/api/dlq")
	sinks["GET /dlq"] = httpGet(t, base+"/dlq")
	cancel()
	<-done
	sinks["store"] = storeBytes(t, db)
	if !strings.Contains(sinks["GET /api/dlq"], "InvalidParameterValue") || !strings.Contains(sinks["store"], "InvalidParameterValue") {
		t.Fatalf("no dead letter to look in:\n%s", sinks["GET /api/dlq"])
	}
	var letters []json.RawMessage
	if err := json.Unmarshal([]byte(sinks["dlq list --json"]), &letters); err != nil || len(letters) < 2 {
		t.Fatalf("dlq list --json: %d dead letters (%v); want one a unit", len(letters), err)
	}
	t.Logf("%d dead letters", len(letters))
	basic := base64.StdEncoding.EncodeToString([]byte(wfsUser + ":" + wfsPass))
	names := make([]string, 0, len(sinks))
	for name := range sinks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var counts []string
		total, where := 0, ""
		for _, m := range append(strings.Fields(markerList), basic) {
			n := strings.Count(sinks[name], m)
			if i := strings.Index(sinks[name], m); i >= 0 && where == "" {
				where = sinks[name][max(0, i-200):min(len(sinks[name]), i+60)]
			}
			total += n
			counts = append(counts, fmt.Sprintf("%s %d", m, n))
		}
		t.Logf("%-17s %s", name, strings.Join(counts, ", "))
		if total > 0 {
			t.Errorf("%s holds a secret %d times (%s), the first here:\n%q", name, total, strings.Join(counts, ", "), where)
		}
	}
}

// checkReceived: the server was sent each secret byte for byte, on every request.
func checkReceived(t *testing.T, got *received) {
	t.Helper()
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.apikey) == 0 {
		t.Fatal("no GetFeature reached the server")
	}
	basic := base64.StdEncoding.EncodeToString([]byte(wfsUser + ":" + wfsPass))
	for i := range got.apikey {
		if got.apikey[i] != wfsKey || got.mapv[i] != pathToken || got.header[i] != hdrToken || got.basic[i] != basic {
			t.Errorf("request %d: the server received apikey %q map %q X-Api-Token %q Basic %q;\nwant %q %q %q %q",
				i+1, got.apikey[i], got.mapv[i], got.header[i], got.basic[i], wfsKey, pathToken, hdrToken, basic)
			return
		}
	}
	t.Logf("the server received %d GetFeature requests, each with the exact key, map, header and Basic credential", len(got.apikey))
}

// storeBytes is everything the store holds: pg_dump of the database, or the bytes of
// the GeoPackage and its write-ahead log.
func storeBytes(t *testing.T, db string) string {
	t.Helper()
	if testdb.IsGeoPackage(db) {
		var all []byte
		for _, p := range []string{db, db + "-wal", db + "-journal"} {
			b, err := os.ReadFile(p)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return string(all)
	}
	out, err := exec.Command(pgDump(t), "--dbname", db).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}

// pgDump is the pg_dump of the cluster's version (PostgreSQL 15, which the test set-up
// installs), falling back to the one on PATH.
func pgDump(t *testing.T) string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/15/bin/pg_dump")
	if len(matches) > 0 {
		return matches[0]
	}
	p, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Fatal("pg_dump is not installed: the test set-up (internal/testdb/postgis.sh) installs it with PostgreSQL")
	}
	return p
}
