package postgis

import (
	"bytes"
	"testing"
)

func TestAppendCopyRow(t *testing.T) {
	tests := []struct {
		name    string
		row     []any
		want    []byte
		wantErr bool
	}{
		{"empty row", nil, []byte{0, 0}, false},
		{"NULLs", []any{nil, []byte(nil), &bytesCell{}}, []byte{0, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, false},
		{"text", []any{"ab", ""}, []byte{0, 2, 0, 0, 0, 2, 'a', 'b', 0, 0, 0, 0}, false},
		{"bytes", []any{[]byte{1, 2, 3}, &bytesCell{b: []byte{9}}, []byte{}}, []byte{0, 3, 0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 1, 9, 0, 0, 0, 0}, false},
		{"a type staging rows never hold", []any{"a", 1.5}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendCopyRow(nil, tt.row)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			if !tt.wantErr && !bytes.Equal(got, tt.want) {
				t.Errorf("appendCopyRow = %v, want %v", got, tt.want)
			}
		})
	}
}
