package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCommandReferenceCurrent: the committed command reference (docs/cli, docs/man) is
// what the command tree generates now, so the pages cannot drift from the flags. After
// changing a command: make docs.
func TestCommandReferenceCurrent(t *testing.T) {
	tmp := t.TempDir()
	md, man := filepath.Join(tmp, "cli"), filepath.Join(tmp, "man")
	if err := writeDocs(io.Discard, md, man); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{md, "../../../docs/cli"}, {man, "../../../docs/man"}} {
		want, got := listDir(t, pair[0]), listDir(t, pair[1])
		if !slices.Equal(want, got) {
			t.Fatalf("%s holds %v, the commands generate %v: run make docs", pair[1], got, want)
		}
		for _, name := range want {
			a, _ := os.ReadFile(filepath.Join(pair[0], name))
			b, _ := os.ReadFile(filepath.Join(pair[1], name))
			if !bytes.Equal(a, b) {
				t.Errorf("%s/%s differs from what the commands generate: run make docs", pair[1], name)
			}
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
