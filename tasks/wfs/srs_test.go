package wfs_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/flows/engine"
	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
	"github.com/geoflow/geoflow/store"
)

// TestSRSTheServerRefuses: an srs the server does not offer passed validation and
// failed every unit at run time with the reason hidden. It is now tried at negotiation,
// before any feature is asked for: the task fails at once, quoting the server and
// naming what it offers.
func TestSRSTheServerRefuses(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 20})
	res := h.run(`typename: gf:parcels
bbox: [11.45, 48.05, 11.55, 48.15]
srs: EPSG:25832
target: {table: utm}`, engine.RunOptions{})
	msg := res.FailedTasks["parcels"]
	if res.Status != store.Failed || res.DeadLetters() != 0 || !strings.Contains(msg, "EPSG:25832") ||
		!strings.Contains(msg, "Unsupported srsName") || !strings.Contains(msg, "urn:ogc:def:crs:EPSG::4326") {
		t.Fatalf("run %s, %d dead, task error %q; want the task failed at negotiation, quoting the server and naming what it offers\n%s",
			res.Status, res.DeadLetters(), msg, tail(h.logs.String()))
	}
	t.Logf("task error: %s", msg)
	if n := h.fx.Stats().GetFeature; n != 0 {
		t.Errorf("%d GetFeature requests before the srs was found wanting", n)
	}
}

// TestFilterTheServerCannotEvaluate: a filter: sent to a server that declares
// ImplementsMinStandardFilter=false was ignored by it, and the harvest held every
// feature. The task now refuses at negotiation.
func TestFilterTheServerCannotEvaluate(t *testing.T) {
	for _, version := range []string{"2.0.0"} {
		t.Run(version, func(t *testing.T) {
			h := newHarness(t, wfsserver.Options{Features: 20})
			res := h.run(`typename: gf:parcels
version: `+version+`
bbox: [11.45, 48.05, 11.55, 48.15]
filter: <fes:Filter xmlns:fes="http://www.opengis.net/fes/2.0"><fes:PropertyIsEqualTo><fes:ValueReference>land_use</fes:ValueReference><fes:Literal>residential</fes:Literal></fes:PropertyIsEqualTo></fes:Filter>
target: {table: filtered}`, engine.RunOptions{})
			msg := res.FailedTasks["parcels"]
			if res.Status != store.Failed || !strings.Contains(msg, "ImplementsMinStandardFilter") {
				t.Fatalf("run %s, task error %q; want the filter refused at negotiation\n%s", res.Status, msg, tail(h.logs.String()))
			}
			if n := h.fx.Stats().GetFeature + h.fx.Stats().Hits; n != 0 {
				t.Errorf("%d GetFeature requests with a filter the server ignores", n)
			}
		})
	}
}

// TestBrokenCapabilitiesAreTheServers: a capabilities document that does not parse was
// reported as a database fault. It is the server's: the task fails naming the
// capabilities and what was wrong, and no store fault is waited for.
func TestBrokenCapabilitiesAreTheServers(t *testing.T) {
	h := newHarness(t, wfsserver.Options{Features: 20})
	h.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<?xml version="1.0"?><wfs:WFS_Capabilities version="2.0.0" xmlns:wfs="http://www.opengis.net/wfs/2.0"><FeatureTypeList><FeatureType><Name>gf:parcels</Name></FeatureType></FeatureTypeList><ows:Operation name="GetFeature"><junk`)
	})
	res := h.run(`typename: gf:parcels
bbox: [11.45, 48.05, 11.55, 48.15]
target: {table: brokencaps}`, engine.RunOptions{})
	msg := res.FailedTasks["parcels"]
	if res.Status != store.Failed || !strings.Contains(msg, "capabilities") || strings.Contains(msg, "database") ||
		strings.Contains(h.logs.String(), "the store failed") {
		t.Fatalf("run %s, task error %q; want the task failed on the server's capabilities, not the store\n%s", res.Status, msg, tail(h.logs.String()))
	}
	t.Logf("task error: %s", msg)
}
