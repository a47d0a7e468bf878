package postgis

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/internal/testdb"
)

// TestOpenErrorsRedactByPosition: a refused connection's error names the role and the
// failure as PostgreSQL said them, and never shows the password: masking the password's
// text everywhere turned `role "geoflowx"` into `role "REDACTED"` for a password equal to
// the role's name, and "failed" into "failREDACTEDd" for a password "e", which showed it.
func TestOpenErrorsRedactByPosition(t *testing.T) {
	base, err := url.Parse(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ user, password string }{
		{"geoflowx", "geoflowx"},
		{"nobody_here", "e"},
		{"nobody_here", "s3cr3t-pass"},
	} {
		u := *base
		u.User = url.UserPassword(tt.user, tt.password)
		_, err := Open(context.Background(), u.String(), nil)
		if err == nil {
			t.Fatalf("role %s: connected", tt.user)
		}
		msg := err.Error()
		if !strings.Contains(msg, `role "`+tt.user+`"`) || !strings.Contains(msg, "failed to connect") {
			t.Errorf("password %q: the role or the failure is masked: %s", tt.password, msg)
		}
		if strings.Contains(msg, tt.user+":"+tt.password+"@") || (len(tt.password) > 3 && strings.Contains(msg, tt.password) && tt.password != tt.user) {
			t.Errorf("password %q shown: %s", tt.password, msg)
		}
	}
}
