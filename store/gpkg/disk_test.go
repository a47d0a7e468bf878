package gpkg_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/testdb"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/store/gpkg"
)

// TestFullDisk: the disk under the file fills up (a small tmpfs, written until SQLite
// answers SQLITE_FULL). The fault is of class disk and temporary; Ping still answers, so
// only ProbeWrite tells the disk is full, until it is grown. FinishRun records the run's
// end all the same, from the reserve StartRun kept; without it (deleted) it cannot.
func TestFullDisk(t *testing.T) {
	tests := []struct {
		name      string
		noReserve bool
	}{
		{name: "with the reserve StartRun keeps"},
		{name: "reserve deleted", noReserve: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			disk := testdb.Tmpfs(t, "2m")
			file := filepath.Join(disk, "full.gpkg")
			s, err := gpkg.Open(ctx, file, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			run, err := s.StartRun(ctx, store.RunStart{Flow: "full", FlowText: "name: full", FlowHash: "x"})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			if fi, err := os.Stat(file + "-reserve"); err != nil || fi.Size() < 1<<20 {
				t.Fatalf("no reserve beside the file after StartRun: %v", err)
			}
			if tt.noReserve {
				if err := os.Remove(file + "-reserve"); err != nil {
					t.Fatal(err)
				}
			}
			fill(t, file)
			fault := s.SetTaskState(ctx, run.ID, "parcels", "wfs", store.Running, "")
			if f, ok := store.AsFault(fault); !ok || f.Class != dlq.ClassDisk || !f.Temporary() {
				t.Fatalf("a full disk: %v (%+v); want a temporary fault of class disk", fault, f)
			}
			if err := s.Ping(ctx); err != nil {
				t.Errorf("Ping on a full disk: %v; a full disk still answers reads", err)
			}
			if f, ok := store.AsFault(s.ProbeWrite(ctx)); !ok || f.Class != dlq.ClassDisk {
				t.Errorf("ProbeWrite on a full disk: %v, want a disk fault", f)
			}

			_, err = s.FinishRun(ctx, run.ID, store.Interrupted, "the store stayed down")
			if tt.noReserve {
				if f, ok := store.AsFault(err); !ok || f.Class != dlq.ClassDisk {
					t.Errorf("FinishRun on a full disk without a reserve: %v, want a disk fault", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FinishRun on a full disk: %v", err)
			}
			var status string
			if queryFile(t, file, fmt.Sprintf("SELECT status FROM geoflow_runs WHERE id = %d", run.ID), &status); status != "interrupted" {
				t.Errorf("the run reads %q, want interrupted", status)
			}
			testdb.ResizeTmpfs(t, disk, "64m")
			if err := s.ProbeWrite(ctx); err != nil {
				t.Errorf("ProbeWrite once the disk has room: %v", err)
			}
		})
	}
}

// fill writes blobs into file, beside the store's own connection as another writer
// would, until the disk is full.
func fill(t *testing.T, file string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE filler (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	// Smaller and smaller rows, so that the room a failed commit leaves at the end of the
	// WAL (which the next commit takes) is used up as well.
	for _, size := range []int{65536, 4096, 256} {
		for i := 0; ; i++ {
			if i == 100000 {
				t.Fatalf("%d rows of %d bytes went into a 2 MB tmpfs", i, size)
			}
			if _, err := db.Exec("INSERT INTO filler VALUES (randomblob(?))", size); err != nil {
				break
			}
		}
	}
	// And the file system's last blocks, outside the file.
	f, err := os.Create(filepath.Join(filepath.Dir(file), "ballast"))
	if err != nil {
		return
	}
	defer f.Close()
	for _, err := f.Write(make([]byte, 4096)); err == nil; _, err = f.Write(make([]byte, 4096)) {
	}
}
