package gpkg

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/store"
)

// reserveSize is the room a run keeps on the file's disk for recording its end: a full
// disk refuses the run's last write (its state) as it refuses the units', and a run left
// recorded as running reads as crashed. 1 MiB holds that commit's WAL frames many times.
const reserveSize = 1 << 20

// probeSize is what ProbeWrite writes: a few pages more than a small unit's commit.
const probeSize = 256 << 10

// reservePath is the sidecar file that holds the reserve; it goes with the file's
// other sidecars (-wal, -shm, -lock) and can be deleted at any time.
func (s *Store) reservePath() string { return s.path + "-reserve" }

// reserve makes sure the reserve is there, when the disk has room for it: written, not
// sparse, so that the space is really taken. A failure only means no reserve.
func (s *Store) reserve() {
	if fi, err := os.Stat(s.reservePath()); err == nil && fi.Size() >= reserveSize {
		return
	}
	if err := writeFile(s.reservePath(), reserveSize); err != nil {
		_ = os.Remove(s.reservePath())
	}
}

// release frees the reserve, for a write that the full disk refused. It reports whether
// there was one.
func (s *Store) release() bool {
	return os.Remove(s.reservePath()) == nil
}

// ProbeWrite proves that the file's disk takes writes: it writes probeSize bytes beside
// the file, syncs and removes them. A full disk answers reads (and so Ping) all along;
// after a disk fault the runner asks this instead. It implements engine.WriteProber.
func (s *Store) ProbeWrite(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path + "-probe"
	defer os.Remove(p)
	return store.DiskFault("probing the GeoPackage's disk", writeFile(p, probeSize))
}

// writeFile writes n zero bytes to a new file at path and syncs it.
func writeFile(path string, n int) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(make([]byte, n))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// diskFull tells a fault of a full disk.
func diskFull(err error) bool {
	f, ok := store.AsFault(err)
	return ok && f.Class == dlq.ClassDisk
}
