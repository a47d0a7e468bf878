package postgis

import "testing"

func TestScriptPath(t *testing.T) {
	for _, tc := range []struct {
		name, path, schema, user, want string
	}{
		{"the default path", `"$user", public`, "geoflow", "postgres", `"$user", public`},
		{"a role named as the schema", `"$user", public`, "geoflow", "geoflow", "public"},
		{"the schema named in the path", `geoflow, public, extra`, "geoflow", "postgres", "public, extra"},
		{"only the schema", `"geoflow"`, "geoflow", "geoflow", "public"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scriptPath(tc.path, tc.schema, tc.user); got != tc.want {
				t.Errorf("scriptPath(%q, %q, %q) = %q; want %q", tc.path, tc.schema, tc.user, got, tc.want)
			}
		})
	}
}
