package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPagesMaskFlowSecrets: a flow that does not validate may quote a value the
// environment gave it (here a token in a URL path, where no name marks it secret);
// the overview, the flow's page and the API's answer show the problem with the value
// masked, as the CLI prints it.
func TestPagesMaskFlowSecrets(t *testing.T) {
	const secret = "tk-Zq81mRw4Xv"
	t.Setenv("UI_TENANT_TOKEN", secret)
	// The scheduler of geoflow serve keeps the problem of a file it could not reload.
	u := newUI(t, uiOptions{scheduled: fakeFlows{{File: "leaky.yaml", Problem: `url: "ftp://gis.example/` + secret + `/wfs" is not an http(s) URL`}}})
	leaky := `name: leaky
tasks:
  a:
    type: wfs
    url: ftp://gis.example/${UI_TENANT_TOKEN}/wfs
    typename: parcels
    target: {table: leaky}
`
	if err := os.WriteFile(filepath.Join(u.dir, "leaky.yaml"), []byte(leaky), 0o644); err != nil {
		t.Fatal(err)
	}
	_, overview, _ := u.do("GET", "/", "")
	_, page, _ := u.do("GET", "/flows/leaky", "")
	_, scheduled, _ := u.do("GET", "/api/flows", "")
	code, api, _ := u.do("POST", "/api/runs", `{"flow":"leaky"}`)
	if code != 422 {
		t.Errorf("POST /api/runs of a flow that does not validate: %d %s", code, api)
	}
	for what, text := range map[string]string{"overview": overview, "flow page": page, "POST /api/runs": api, "GET /api/flows": scheduled} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s shows the token:\n%s", what, text)
		}
		if !strings.Contains(text, "not an http(s) URL") || !strings.Contains(text, "ftp://gis.example/REDACTED/wfs") {
			t.Errorf("the %s does not show the problem, masked:\n%s", what, text)
		}
	}
}
