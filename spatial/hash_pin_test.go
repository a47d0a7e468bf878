package spatial

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/paulmach/orb"
	orbwkb "github.com/paulmach/orb/encoding/wkb"
)

// pinnedFeatures are features as the readers give them, each with the hash it had when
// pinned: a harvest parcel from GeoJSON (numbers as float64) and from GML (all text),
// and features with every value kind PayloadHash tells apart, more properties than its
// key buffer holds on the stack included.
func pinnedFeatures() []struct {
	name string
	f    *Feature
	want string
} {
	ring := orb.Ring{{11.4501048, 48.050044}, {11.4501027, 48.0500483}, {11.4500955, 48.0500587},
		{11.4500839, 48.0500646}, {11.4500683, 48.0500659}, {11.4501048, 48.050044}}
	many := map[string]any{}
	for i := range 40 {
		many[fmt.Sprintf("p%02d", 39-i)] = float64(i) / 3
	}
	return []struct {
		name string
		f    *Feature
		want string
	}{
		{"geojson parcel", &Feature{ID: "parcels.0", Geometry: orb.Polygon{ring}, Properties: map[string]any{
			"parcel_id": "GF-00000000", "cadastre_no": 4000000005.0, "area_m2": 27.57, "zone": "Straße & Weg",
			"Land-Use": "mixed", "owner_count": 1.0, "assessed_value": 1695193.72, "is_public": false,
			"surveyed": "2003-09-03", "updated_at": "2021-06-04T08:17:41Z"}}, "47f57b4f07d09a058814afd9cd319ce9fbd17366d69a91e5dfc9e772caeb465d"},
		{"gml parcel", &Feature{ID: "parcels.0", Geometry: orb.Polygon{ring}, Properties: map[string]any{
			"parcel_id": "GF-00000000", "cadastre_no": "4000000005", "area_m2": "27.57", "zone": nil,
			"Land-Use": "mixed", "owner_count": "1", "is_public": "false", "surveyed": "2003-09-03",
			"updated_at": "2021-06-04T08:17:41Z"}}, "e5897a006cab0c6eb8946aaeff50770093758aca2c0066eca9ba16f38e482b8c"},
		{"value kinds", &Feature{Geometry: orb.MultiPoint{{1, 2}, {3, 4}}, Properties: map[string]any{
			"i": int64(-7), "u": uint16(9), "f32": float32(0.5), "nan": math.NaN(), "negzero": math.Copysign(0, -1),
			"big": 1e300, "num": json.Number("2.50"), "t": true, "nested": map[string]any{"b": []any{1.0, "x", nil}, "a": []string{"s"}},
			"floats": []float64{1, 2.5}, "geom": orb.LineString{{0, 0}, {1, 1}},
			"time": time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)}}, "083c4414d26a6980e22ab4f38402b877d4b76e90e7f3d4fca3bce565cc48eba8"},
		{"many properties", &Feature{Geometry: orb.Point{1, 2}, Properties: many}, "c4ff07b2f0723f728aae6711d06d28fc7a04bceae451af272b0556c1c1e37dc8"},
		{"no geometry", &Feature{Properties: map[string]any{}}, "4091903c73a579c2e2282f2c91812ce0df52ff1da0d6c6003725a78641603456"},
	}
}

// TestPayloadHashPinned holds PayloadHash to the hashes stored rows already carry: a
// rerun against them must stay a no-op, whatever the implementation does inside.
func TestPayloadHashPinned(t *testing.T) {
	for _, tt := range pinnedFeatures() {
		t.Run(tt.name, func(t *testing.T) {
			got := PayloadHash(tt.f)
			if h := hex.EncodeToString(got[:]); h != tt.want {
				t.Errorf("PayloadHash = %s, want %s", h, tt.want)
			}
		})
	}
}

// TestHasher: a Hasher gives PayloadHash's hash for every feature of a stream, whether
// the feature has the previous one's names (looked up in their kept order), as many
// other names, fewer or more, or none; and Source gives the hash a transform kept.
func TestHasher(t *testing.T) {
	parcel := pinnedFeatures()[0].f
	renamed := &Feature{Geometry: parcel.Geometry, Properties: map[string]any{}}
	i := 0
	for k, v := range parcel.Properties {
		if i++; i == 3 {
			k = "zz_" + k // as many names as the parcel, one of them another
		}
		renamed.Properties[k] = v
	}
	kept := [32]byte{1, 2, 3}
	stream := []*Feature{parcel, parcel, renamed, parcel, nil, parcel, {Geometry: orb.Point{1, 2}}, parcel,
		{Geometry: orb.Point{1, 2}, Properties: map[string]any{"a": 1.0}}, {Properties: map[string]any{"b": 1.0}},
		{ID: "kept", Properties: map[string]any{"b": 2.0}, Hash: &kept}}
	for _, p := range pinnedFeatures() {
		stream = append(stream, p.f, p.f)
	}
	var h Hasher
	for n := range 2 {
		for i, f := range stream {
			if got, want := h.Sum(f), PayloadHash(f); got != want {
				t.Fatalf("pass %d, feature %d: Sum = %x, PayloadHash = %x", n, i, got, want)
			}
			want := PayloadHash(f)
			if f != nil && f.Hash != nil {
				want = *f.Hash
			}
			if got := h.Source(f); got != want {
				t.Fatalf("pass %d, feature %d: Source = %x, want %x", n, i, got, want)
			}
		}
	}
}

// TestPicker: Pick gives Source's hash and, for every feature of the stream TestHasher
// runs, the value of each name picked as a lookup gives it (nil for a name the feature
// lacks), whether the values come from the hash's lookups or, for a nil feature or one
// whose hash a transform kept, from lookups of their own; two Pickers of other names
// share one Hasher.
func TestPicker(t *testing.T) {
	parcel := pinnedFeatures()[0].f
	var names []string
	for k := range parcel.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	renamed := &Feature{Geometry: parcel.Geometry, Properties: map[string]any{}}
	for i, k := range names {
		if i == 2 {
			k = "zz_" + k
		}
		renamed.Properties[k] = parcel.Properties[names[i]]
	}
	kept := [32]byte{1, 2, 3}
	stream := []*Feature{parcel, parcel, renamed, parcel, nil, parcel, {Geometry: orb.Point{1, 2}}, parcel,
		{Properties: map[string]any{"b": 1.0, names[0]: "x"}}, {Properties: map[string]any{"b": nil}},
		{ID: "kept", Geometry: orb.Point{3, 4}, Properties: map[string]any{"b": 2.0, names[1]: "k"}, Hash: &kept}, parcel,
		{Geometry: orb.LineString{{1, 2}, {3, 4}}, Properties: map[string]any{"b": 3.0}}}
	for _, p := range pinnedFeatures() {
		stream = append(stream, p.f, p.f)
	}
	// Columns in another order than the names', one the parcels lack, one only some have.
	cols := []string{"b", "zz_" + names[2], "not there"}
	for i := range names {
		cols = append(cols, names[len(names)-1-i])
	}
	pickers := []*Picker{NewPicker(cols), NewPicker([]string{names[1]}), NewPicker(nil)}
	var h Hasher
	for n := range 3 {
		for i, f := range stream {
			p := pickers[0] // the last pass: one Picker for every feature
			if n < 2 {
				p = pickers[i%len(pickers)]
			}
			got := h.Pick(f, p)
			if want := new(Hasher).Source(f); got != want {
				t.Fatalf("pass %d, feature %d: Pick = %x, Source = %x", n, i, got, want)
			}
			for j, c := range p.names {
				var want any
				if f != nil {
					want = f.Properties[c]
				}
				if got := p.Values()[j]; !reflect.DeepEqual(got, want) {
					t.Fatalf("pass %d, feature %d: %s = %v, want %v", n, i, c, got, want)
				}
			}
			var want []byte
			if f != nil && f.Hash == nil && f.Geometry != nil {
				want, _ = orbwkb.Marshal(f.Geometry, binary.LittleEndian)
			}
			if got := p.WKB(); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("pass %d, feature %d: WKB %x, want %x", n, i, got, want)
			}
		}
	}
}
