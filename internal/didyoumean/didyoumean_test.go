package didyoumean

import "testing"

// TestNearest: a typo finds the name it stands for; a name too far from every candidate
// finds none.
func TestNearest(t *testing.T) {
	names := []string{"typename", "depends_on", "url", "bbox", "parcel_id"}
	tests := []struct{ name, in, want string }{
		{name: "one letter off", in: "typname", want: "typename"},
		{name: "swapped", in: "dpeends_on", want: "depends_on"},
		{name: "case", in: "TypeName", want: "typename"},
		{name: "short, one edit", in: "bbx", want: "bbox"},
		{name: "short, two edits", in: "bx", want: ""},
		{name: "a prefix", in: "parc", want: ""},
		{name: "a longer prefix", in: "parcel", want: "parcel_id"},
		{name: "nothing near", in: "zoning", want: ""},
		{name: "no candidates", in: "url", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := names
			if tt.name == "no candidates" {
				c = nil
			}
			if got := Nearest(tt.in, c); got != tt.want {
				t.Errorf("Nearest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
