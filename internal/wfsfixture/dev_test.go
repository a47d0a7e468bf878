package wfsfixture

import (
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
)

// TestDevServer serves a fixture until killed when WFSFIXTURE_LISTEN is set,
// for trying clients by hand before the CLI command exists:
//
//	WFSFIXTURE_LISTEN=127.0.0.1:18080 WFSFIXTURE_FEATURES=5000 go test -run TestDevServer -timeout 0 ./internal/wfsfixture
func TestDevServer(t *testing.T) {
	addr := os.Getenv("WFSFIXTURE_LISTEN")
	if addr == "" {
		t.Skip("WFSFIXTURE_LISTEN not set")
	}
	n, _ := strconv.Atoi(os.Getenv("WFSFIXTURE_FEATURES"))
	s := New(Options{Features: n, Flavor: os.Getenv("WFSFIXTURE_FLAVOR"), ImplementsSorting: true})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serving %s on http://%s/wfs", s.TypeName(), ln.Addr())
	t.Fatal(http.Serve(ln, s))
}
