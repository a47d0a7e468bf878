package gpkg

import (
	"database/sql"
	"testing"
)

func TestMerged(t *testing.T) {
	tests := []struct {
		name   string
		id     any
		stored sql.NullString
		want   bool
	}{
		{name: "no id: delivered again", id: nil, stored: sql.NullString{String: "a.1", Valid: true}},
		{name: "empty id: delivered again", id: "", stored: sql.NullString{String: "a.1", Valid: true}},
		{name: "same id: delivered again", id: "a.1", stored: sql.NullString{String: "a.1", Valid: true}},
		{name: "another id: merged", id: "a.2", stored: sql.NullString{String: "a.1", Valid: true}, want: true},
		{name: "stored without id: merged", id: "a.2", stored: sql.NullString{}, want: true},
		{name: "stored with an empty id: merged", id: "a.2", stored: sql.NullString{Valid: true}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := merged(tt.id, tt.stored); got != tt.want {
				t.Errorf("merged(%v, %v) = %v, want %v", tt.id, tt.stored, got, tt.want)
			}
		})
	}
}
