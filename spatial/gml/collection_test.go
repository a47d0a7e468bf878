package gml

import "testing"

func TestCollectionChildKind(t *testing.T) {
	tests := []struct {
		name  string
		local string
		cls   nsClass
		want  collChild
	}{
		{name: "WFS 2.0 member", local: "member", cls: nsWFS, want: collMember},
		{name: "GML featureMember", local: "featureMember", cls: nsGML, want: collMember},
		{name: "GML featureMembers", local: "featureMembers", cls: nsGML, want: collMember},
		{name: "member in the GML namespace", local: "member", cls: nsGML, want: collMember},
		{name: "member in another namespace", local: "member", cls: nsOther, want: collOther},
		{name: "GML boundedBy", local: "boundedBy", cls: nsGML, want: collBoundedBy},
		{name: "boundedBy in the WFS namespace", local: "boundedBy", cls: nsWFS, want: collBoundedBy},
		{name: "boundedBy in another namespace", local: "boundedBy", cls: nsOther, want: collOther},
		{name: "truncatedResponse", local: "truncatedResponse", cls: nsWFS, want: collTruncated},
		{name: "truncatedResponse in GML", local: "truncatedResponse", cls: nsGML, want: collOther},
		{name: "additionalObjects", local: "additionalObjects", cls: nsWFS, want: collOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := collectionChildKind(tt.local, tt.cls); got != tt.want {
				t.Errorf("collectionChildKind(%q, %d) = %d, want %d", tt.local, tt.cls, got, tt.want)
			}
		})
	}
}
