package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/devserver/wfsserver"
)

// TestMirrorHiddenListing: a server whose listing leaves 5% of the features out and
// lowers its count to match, while still answering them by id, makes a mirror close
// nothing it still serves (exit 0, the inconsistency on the task), while the features
// really deleted upstream are closed in the same run; a --bbox rerun closes nothing more.
func TestMirrorHiddenListing(t *testing.T) {
	for _, kind := range []string{"wfs", "ogcapi_features", "arcgis_features"} {
		t.Run(kind, func(t *testing.T) {
			eachStore(t, func(t *testing.T, db string) { testMirrorHiddenListing(t, db, kind) })
		})
	}
}

func testMirrorHiddenListing(t *testing.T, db, kind string) {
	const deleted, hidden = 7, 60 // of 1,200
	e := newMirrorEnv(t, db, kind, wfsserver.Changes{Deleted: deleted, Hidden: hidden})
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	if err := e.src.SetRevision(1, e.changes); err != nil {
		t.Fatal(err)
	}
	out := e.geoflow(0, "run", e.mirror, "--progress", "off")
	if !strings.Contains(out, fmt.Sprintf("left out %d features it still serves by id", hidden)) {
		t.Errorf("the run does not report the listing's inconsistency:\n%s", out)
	}
	got := e.task(2)
	if got.Deleted != deleted || got.State != "done" || !strings.Contains(got.Note, fmt.Sprintf("left out %d features", hidden)) {
		t.Errorf("run 2: %+v; want %d closed (those deleted upstream), done, the hidden ones noted", got, deleted)
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); c != int64(e.src.Count()) {
		t.Errorf("the mirror holds %d current features, the server serves %d by id", c, e.src.Count())
	}
	e.geoflow(0, "run", e.mirror, "--progress", "off", "--bbox", "11.46,48.06,11.52,48.12")
	if got := e.task(3); got.Deleted != 0 {
		t.Errorf("the --bbox rerun: %+v; want nothing closed", got)
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); c != int64(e.src.Count()) {
		t.Errorf("after the --bbox rerun the mirror holds %d current features, want %d", c, e.src.Count())
	}
}

// TestMirrorDeleteAfter: a mirror keyed on a property (target.key) cannot ask the server
// by id: what the listing leaves out is kept until absent from target.delete_after (2)
// complete runs, then deleted.
func TestMirrorDeleteAfter(t *testing.T) { eachStore(t, testMirrorDeleteAfter) }

func testMirrorDeleteAfter(t *testing.T, db string) {
	const deleted, hidden = 7, 60
	e := newMirrorEnv(t, db, "wfs", wfsserver.Changes{Deleted: deleted, Hidden: hidden})
	e.mirror = writeFlow(t, strings.Replace(mirrorFlow(e.source, "mirror", "mirror", true), "history: true}", "history: true, key: [parcel_id]}", 1))
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	first := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL")
	if err := e.src.SetRevision(1, e.changes); err != nil {
		t.Fatal(err)
	}
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	if got := e.task(2); got.Deleted != 0 || !strings.Contains(got.Note, fmt.Sprintf("%d absent features not asked for by id are kept", deleted+hidden)) {
		t.Errorf("run 2: %+v; want nothing closed, %d kept until target.delete_after", got, deleted+hidden)
	}
	e.geoflow(0, "run", e.mirror, "--progress", "off")
	if got := e.task(3); got.Deleted != deleted+hidden {
		t.Errorf("run 3: %+v; want the %d absent from 2 complete runs closed", got, deleted+hidden)
	}
	if c := e.count("SELECT count(*) FROM mirror WHERE gf_valid_to IS NULL"); c != first-deleted-hidden {
		t.Errorf("the mirror holds %d current features, want %d", c, first-deleted-hidden)
	}
}
