package tasks

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

func TestSpool(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	body := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.IntN(256))
		}
		return b
	}
	tests := []struct {
		name   string
		data   []byte
		head   int  // bytes written through Write first, as a TeeReader does
		toFile bool // the body is larger than what stays in memory
	}{
		{name: "empty", data: nil},
		{name: "one chunk", data: body(1000)},
		{name: "chunk boundary", data: body(chunkSize), head: 10},
		{name: "a page", data: body(1_700_000), head: 70_000},
		{name: "larger than memory", data: body(spoolMemory + 3*chunkSize + 17), head: 5000, toFile: true},
		{name: "head alone larger than memory", data: body(spoolMemory + 1), head: spoolMemory + 1, toFile: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSpool(nil)
			defer s.Close()
			if _, err := s.Write(tt.data[:tt.head]); err != nil {
				t.Fatal(err)
			}
			// A reader that hands out odd-sized pieces, as a network does.
			n, err := s.ReadFrom(iotest.HalfReader(bytes.NewReader(tt.data[tt.head:])))
			if err != nil || n != int64(len(tt.data)-tt.head) || s.Len() != int64(len(tt.data)) {
				t.Fatalf("ReadFrom: %d, %v; Len %d; want %d bytes", n, err, s.Len(), len(tt.data))
			}
			if (s.file != nil) != tt.toFile {
				t.Errorf("in a file: %v, want %v", s.file != nil, tt.toFile)
			}
			for range 2 { // read twice: a write retried after a store fault reads it again
				r, err := s.Reader()
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(r, 200)))
				if err != nil {
					t.Fatal(err)
				}
				rest, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(append(got, rest...), tt.data) {
					t.Fatalf("read back %d bytes (%v), want the %d spooled", len(got)+len(rest), err, len(tt.data))
				}
			}
		})
	}
}

// A body cut off mid-stream is the source's error, returned as it is for the handler to
// classify; what arrived stays spooled.
func TestSpoolReadError(t *testing.T) {
	s := newSpool(nil)
	defer s.Close()
	cut := errors.New("connection reset by peer")
	n, err := s.ReadFrom(io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(cut)))
	if !errors.Is(err, cut) || n != 3 {
		t.Fatalf("ReadFrom = %d, %v; want 3 bytes and the reader's error", n, err)
	}
	s.Close()
	s.Close() // twice is harmless
	var none *Spool
	none.Close()
}
