package spatial

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/paulmach/orb"
)

func TestPayloadHash(t *testing.T) {
	base := func() *Feature {
		return &Feature{
			ID:       "a.1",
			Geometry: orb.Point{7, 50},
			Properties: map[string]any{
				"name": "x", "n": 1.0, "flag": true, "nil": nil,
				"nested": map[string]any{"b": 2.0, "a": []any{1.0, "s"}},
			},
		}
	}
	tests := []struct {
		name   string
		change func(f *Feature)
		same   bool
	}{
		{name: "identical", change: func(f *Feature) {}, same: true},
		{name: "ID is not part of it", change: func(f *Feature) { f.ID = "b.2" }, same: true},
		{name: "int and float alike", change: func(f *Feature) { f.Properties["n"] = 1 }, same: true},
		{name: "int64 and json.Number alike", change: func(f *Feature) { f.Properties["n"] = json.Number("1.0") }, same: true},
		{name: "float32 alike", change: func(f *Feature) { f.Properties["n"] = float32(1) }, same: true},
		{name: "nested map built in another order", change: func(f *Feature) {
			f.Properties["nested"] = map[string]any{"a": []any{int64(1), "s"}, "b": 2}
		}, same: true},
		{name: "number vs string", change: func(f *Feature) { f.Properties["n"] = "1" }},
		{name: "nil vs empty string", change: func(f *Feature) { f.Properties["nil"] = "" }},
		{name: "missing vs nil", change: func(f *Feature) { delete(f.Properties, "nil") }},
		{name: "bool", change: func(f *Feature) { f.Properties["flag"] = false }},
		{name: "geometry moved", change: func(f *Feature) { f.Geometry = orb.Point{7, 50.000001} }},
		{name: "geometry nil", change: func(f *Feature) { f.Geometry = nil }},
		{name: "array order is data", change: func(f *Feature) {
			f.Properties["nested"] = map[string]any{"b": 2.0, "a": []any{"s", 1.0}}
		}},
		{name: "key moved between levels", change: func(f *Feature) {
			f.Properties["nested"] = map[string]any{"b": 2.0}
			f.Properties["a"] = []any{1.0, "s"}
		}},
		{name: "value moved into key", change: func(f *Feature) {
			delete(f.Properties, "name")
			f.Properties["namex"] = ""
		}},
	}
	want := PayloadHash(base())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base()
			tt.change(f)
			got := PayloadHash(f)
			if (got == want) != tt.same {
				t.Errorf("hash equal = %v, want %v", got == want, tt.same)
			}
		})
	}
}

func TestPayloadHashStable(t *testing.T) {
	// Pinned so that a change to the canonical encoding is noticed: stored
	// hashes would stop matching re-harvested features.
	f := &Feature{Geometry: orb.Point{1, 2}, Properties: map[string]any{"a": "b", "n": 3.5}}
	got := PayloadHash(f)
	const want = "11a96522f87ad7c28a2fea9a4377fd654f8b918b50c7470591aaf6a1f0e97c58"
	if h := hex.EncodeToString(got[:]); h != want {
		t.Errorf("PayloadHash = %s, want %s", h, want)
	}
	if PayloadHash(nil) != PayloadHash(&Feature{}) {
		t.Error("nil feature should hash like an empty one")
	}
}
