package cli

import (
	"strings"
	"testing"
)

// TestParseLocation: --database names PostgreSQL by a URL or key=value pairs and a
// GeoPackage by its path, a gpkg: path or a file: URL; anything else is refused in one
// line that says what is accepted.
func TestParseLocation(t *testing.T) {
	tests := []struct {
		name     string
		loc      string
		wantPG   bool
		wantPath string
		wantErr  string // a substring of the error; empty when none is wanted
		secret   string // never in the error, which then names the value redacted
	}{
		{name: "postgres URL", loc: "postgres://geoflow:pw@db.example.com:5432/geoflow?sslmode=require", wantPG: true},
		{name: "postgresql URL", loc: "postgresql://localhost/geoflow", wantPG: true},
		{name: "scheme in capitals", loc: "POSTGRES://localhost/geoflow", wantPG: true},
		{name: "key=value DSN", loc: "host=localhost port=5432 dbname=geoflow user=geoflow", wantPG: true},
		{name: "key=value DSN over a Unix socket", loc: "host=/var/run/postgresql dbname=geoflow", wantPG: true},
		{name: "gpkg file", loc: "x.gpkg", wantPath: "x.gpkg"},
		{name: "gpkg path in capitals", loc: "data/Harvest.GPKG", wantPath: "data/Harvest.GPKG"},
		{name: "absolute gpkg path", loc: "/srv/geoflow/x.gpkg", wantPath: "/srv/geoflow/x.gpkg"},
		{name: "gpkg: relative", loc: "gpkg:rel/x.gpkg", wantPath: "rel/x.gpkg"},
		{name: "gpkg: absolute URL", loc: "gpkg:///abs/x.gpkg", wantPath: "/abs/x.gpkg"},
		{name: "file URL", loc: "file:///abs/x.gpkg", wantPath: "/abs/x.gpkg"},
		{name: "file URL on localhost", loc: "file://localhost/abs/x.gpkg", wantPath: "/abs/x.gpkg"},
		{name: "file URL escaped", loc: "file:///abs/my%20data.gpkg", wantPath: "/abs/my data.gpkg"},
		{name: "file URL on another host", loc: "file://server/abs/x.gpkg", wantErr: "file:///ABSOLUTE/PATH"},
		{name: "gpkg: without a file", loc: "gpkg:", wantErr: "no file named"},
		{name: "mysql URL (a user name may be a token)", loc: "mysql://geoflow@db.example.com/geoflow", wantErr: "neither a PostgreSQL URL", secret: "geoflow@"},
		{name: "mysql URL with a password", loc: "mysql://geoflow:hunter2@db.example.com/geoflow", wantErr: "neither a PostgreSQL URL", secret: "hunter2"},
		{name: "credentials without a scheme", loc: "geoflow:hunter2@db.example.com/geo", wantErr: "neither a PostgreSQL URL", secret: "hunter2"},
		{name: "key=value with a URL in it", loc: "host=db.example.com password=hunter2 options=x://y", wantErr: "neither a PostgreSQL URL", secret: "hunter2"},
		{name: "not a gpkg file", loc: "foo.txt", wantErr: "neither a PostgreSQL URL"},
		{name: "sqlite file", loc: "x.sqlite", wantErr: "a path ending in .gpkg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pg, path, err := parseLocation(tt.loc)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("parseLocation(%q) = %v, %q, nil; want an error saying %q", tt.loc, pg, path, tt.wantErr)
				}
				named := strings.Contains(err.Error(), tt.loc)
				if tt.secret != "" {
					named = !strings.Contains(err.Error(), tt.secret) && strings.Contains(err.Error(), "db.example.com")
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !named || strings.Contains(err.Error(), "\n") {
					t.Fatalf("parseLocation(%q) = %v, %q, %v; want one line naming it and saying %q", tt.loc, pg, path, err, tt.wantErr)
				}
				return
			}
			if err != nil || pg != tt.wantPG || path != tt.wantPath {
				t.Errorf("parseLocation(%q) = %v, %q, %v; want %v, %q", tt.loc, pg, path, err, tt.wantPG, tt.wantPath)
			}
		})
	}
}
