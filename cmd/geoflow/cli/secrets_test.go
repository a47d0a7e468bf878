package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvironmentSecretsNeverShow: a token the flow takes from the environment into a
// place no name marks as secret (a URL path, as some services put their keys) reached the
// retry log lines, the dead letter and the final error, echoed by a server that quotes
// the request. Values ${VAR} gives a URL or a header are now masked wherever they appear.
func TestEnvironmentSecretsNeverShow(t *testing.T) {
	const token = "tk-7Qw9ZpX2"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0"><ows:Exception exceptionCode="InvalidParameterValue"><ows:ExceptionText>no such service: %s (header %s)</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`,
			r.URL.Path, r.Header.Get("X-Tenant"))
	}))
	defer srv.Close()
	flow := writeFlow(t, `name: secretive
tasks:
  a:
    type: wfs
    url: ${SECRET_BASE}/${TENANT_TOKEN}/${SERVICE_DIR}/wfs
    headers: {X-Tenant: "${TENANT_TOKEN}"}
    typename: parcels
    bbox: [11.45, 48.05, 11.55, 48.15]
    retry: {max_attempts: 2, base_delay: 1ms}
    target: {table: secretive}
`)
	db := filepath.Join(t.TempDir(), "s.gpkg")
	env := map[string]string{"TENANT_TOKEN": token, "SECRET_BASE": srv.URL, "SERVICE_DIR": "geodata"}
	code, out, errs := geoflow(t, env, "run", flow, "--database", db)
	if code == 0 || !strings.Contains(errs, "no such service") {
		t.Fatalf("exit %d; want the run to fail and say why\n%s", code, errs)
	}
	_, list, _ := geoflow(t, nil, "runs", "list", "--database", db)
	_, show, _ := geoflow(t, nil, "runs", "show", "1", "--json", "--database", db)
	_, dl, _ := geoflow(t, nil, "dlq", "list", "--json", "--database", db)
	for what, text := range map[string]string{"stdout": out, "stderr": errs, "runs list": list, "runs show": show, "dlq list": dl} {
		if strings.Contains(text, token) {
			t.Errorf("%s shows the token:\n%s", what, text)
		}
	}
	// A value of a variable whose name says nothing secret is left alone, so that logs
	// stay readable (its layer, its host).
	if !strings.Contains(errs, "/geodata/wfs") {
		t.Errorf("the harmless part of the URL was masked too:\n%s", errs)
	}
	// A flow that does not validate quotes its values: the token is masked there too.
	env["SECRET_BASE"] = "ftp://example.com"
	code, _, errs = geoflow(t, env, "validate", flow)
	if code != 1 || strings.Contains(errs, token) || !strings.Contains(errs, "not an http(s) URL") {
		t.Errorf("validate: exit %d\n%s\nwant exit 1, the problem said, the token masked", code, errs)
	}
}
