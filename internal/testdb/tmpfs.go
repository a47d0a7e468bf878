package testdb

import (
	"os"
	"os/exec"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount's size= option takes it: "3m") on a new
// directory and returns the directory; it is unmounted when the test ends. Tests fill it
// up to meet a full disk for real. Mounting needs root, as CI runs; elsewhere the test is
// skipped, unless GEOFLOW_REQUIRE_MOUNT=1 makes that a failure.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("GEOFLOW_REQUIRE_MOUNT") == "1" {
			t.Fatal("testdb: GEOFLOW_REQUIRE_MOUNT=1 but the test does not run as root: it mounts a small tmpfs to fill up")
		}
		t.Skip("testdb: mounting a tmpfs to fill up needs root (CI runs as root; GEOFLOW_REQUIRE_MOUNT=1 fails instead)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "geoflow-test", dir).CombinedOutput(); err != nil {
		t.Fatalf("testdb: mounting a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("testdb: unmounting %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// ResizeTmpfs gives the tmpfs Tmpfs mounted on dir a new size: a full disk freed.
func ResizeTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		t.Fatalf("testdb: resizing the tmpfs on %s: %v: %s", dir, err, out)
	}
}
