package server_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
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

// TestAnswersMaskSecretsTheStoreHeld: a dead letter written before a secret was known
// (or by an older geoflow) holds it percent-encoded; the API and the pages mask it with
// the flows' secrets before they answer.
func TestAnswersMaskSecretsTheStoreHeld(t *testing.T) {
	const key = "k&y/SECRET+FFFF6666=x y"
	u := newUI(t, uiOptions{})
	u.secrets.Add(key)
	ctx := context.Background()
	run, err := u.db.StartRun(ctx, store.RunStart{Flow: "parcels"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	e := dlq.Entry{Flow: "parcels", Task: "parcels", RunID: run.ID, Unit: "q.1", Class: dlq.ClassHTTP4xx, HTTPStatus: 400, Attempts: 1,
		Request: dlq.Request{Method: "GET", URL: "https://wfs.example/wfs?map=" + url.QueryEscape(key)},
		Error:   "HTTP 400: unknown map " + url.PathEscape(key), Snippet: `{"error":"bad map k\u0026y/SECRET+FFFF6666=x y"}`}
	if _, err := u.db.RecordDeadLetter(ctx, store.UnitRef{RunID: run.ID, TaskID: "parcels", Key: "q.1"}, e); err != nil {
		t.Fatal(err)
	}
	if n := u.count(`SELECT count(*) FROM geoflow_dlq WHERE geoflow_dlq::text LIKE '%FFFF6666%'`); n != 1 {
		t.Fatalf("the dead letter holds the key %d times, want it there for the test", n)
	}
	for _, path := range []string{"/api/dlq", "/dlq", "/api/dlq/1", "/runs/" + strconv.FormatInt(run.ID, 10)} {
		code, body, _ := u.do("GET", path, "")
		if code != 200 || strings.Contains(body, "FFFF6666") {
			t.Errorf("GET %s: %d, shows the key:\n%s", path, code, body)
		}
	}
}
