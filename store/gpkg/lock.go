package gpkg

import (
	"fmt"
	"hash/fnv"
	"os"
	"sync"
)

// The lock file (FILE-lock, next to the GeoPackage) carries one byte-range lock per thing
// that must not overlap across processes, at these offsets. SQLite's own locks stay on
// the database file; this file is never the database, so closing it can never drop them.
const (
	lockServe   int64 = 1       // a geoflow serve instance: one per file
	lockRunBase int64 = 1 << 40 // + run id: the process executing the run
	lockFlows   int64 = 2 << 40 // + hash of the flow: runs of a flow (a second one is refused)
	lockSched   int64 = 3 << 40 // + hash of the flow: the scheduler's flow lock
)

func flowOffset(base int64, flow string) int64 {
	h := fnv.New32a()
	h.Write([]byte(flow))
	return base + int64(h.Sum32())
}

// locks hands out byte-range locks on the lock file. Each lock is taken on a descriptor
// of its own, so that locks of one process conflict with each other as they do across
// processes, and releasing one (closing its descriptor) releases nothing else.
type locks struct {
	path string
	mu   sync.Mutex
	held map[*os.File]struct{}
}

func openLocks(path string) (*locks, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the lock file: %w", err)
	}
	f.Close()
	return &locks{path: path, held: map[*os.File]struct{}{}}, nil
}

// try takes the lock at off without waiting, exclusively or shared. ok is false when a
// conflicting holder has it; release gives it back and may be called more than once.
func (l *locks) try(off int64, exclusive bool) (release func(), ok bool, err error) {
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, fmt.Errorf("opening the lock file: %w", err)
	}
	ok, err = tryLock(f, off, exclusive)
	if err != nil || !ok {
		f.Close()
		return nil, false, err
	}
	l.mu.Lock()
	l.held[f] = struct{}{}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.held, f)
			l.mu.Unlock()
			f.Close()
		})
	}, true, nil
}

// busy tells whether anyone, this process included (on Linux), holds the lock at off.
// It only tests the lock (probeLock), never takes it, so it cannot make another
// process's StartRun or HoldRun fail in the meantime.
func (l *locks) busy(off int64) (bool, error) {
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("opening the lock file: %w", err)
	}
	defer f.Close()
	return probeLock(f, off)
}

// close releases every lock still held.
func (l *locks) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for f := range l.held {
		f.Close()
	}
	clear(l.held)
}
