package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/geoflow/geoflow/dlq"
)

func TestDiskFault(t *testing.T) {
	tests := []struct {
		name string
		err  error
		temp bool
	}{
		{name: "disk full", err: &os.PathError{Op: "write", Path: "/t/1.png", Err: syscall.ENOSPC}, temp: true},
		{name: "i/o error", err: &os.PathError{Op: "write", Path: "/t/1.png", Err: syscall.EIO}, temp: true},
		{name: "permission", err: &os.PathError{Op: "open", Path: "/t/1.png", Err: syscall.EACCES}},
		{name: "no such directory", err: &os.PathError{Op: "open", Path: "/t/1.png", Err: syscall.ENOENT}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("tile 1/2/3: %w", DiskFault("writing /t/1.png", tt.err))
			f, ok := AsFault(err)
			if !ok || f.Temporary() != tt.temp || f.FailureClass() != dlq.ClassDisk || !f.FailureClass().Sink() {
				t.Fatalf("%+v: want a disk fault, temporary %v", f, tt.temp)
			}
			var c dlq.Classed
			if !errors.As(err, &c) || c.FailureClass() != dlq.ClassDisk {
				t.Errorf("not classed disk for the dead-letter table")
			}
		})
	}
	if DiskFault("x", nil) != nil {
		t.Error("DiskFault(nil) is not nil")
	}
}
