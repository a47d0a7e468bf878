package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestAPIUnitsLimitAndUnknownRun: /api/runs/{id}/units takes every limit up to its
// default of 20,000 (the default itself used to be refused), refuses more saying the
// range, and answers an unknown run with 404, as /api/runs/{id} does.
func TestAPIUnitsLimitAndUnknownRun(t *testing.T) {
	u := newUI(t, uiOptions{})
	runID, _ := u.seedHostile()
	tests := []struct {
		path string
		code int
		want string
	}{
		{"/api/runs/" + itoa(runID) + "/units", http.StatusOK, `"total":2`},
		{"/api/runs/" + itoa(runID) + "/units?limit=20000", http.StatusOK, `"total":2`},
		{"/api/runs/" + itoa(runID) + "/units?limit=1", http.StatusOK, `"truncated":true`},
		{"/api/runs/" + itoa(runID) + "/units?limit=20001", http.StatusBadRequest, `limit \"20001\": want a whole number from 1 to 20000`},
		{"/api/runs/" + itoa(runID) + "/units?limit=0", http.StatusBadRequest, "from 1 to 20000"},
		{"/api/runs/999/units", http.StatusNotFound, "no run 999"},
		{"/api/runs/999", http.StatusNotFound, "no run 999"},
		{"/api/runs?limit=10001", http.StatusBadRequest, "from 1 to 10000"},
	}
	for _, tt := range tests {
		code, body, _ := u.do("GET", tt.path, "")
		if code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s: %d %s; want %d with %q", tt.path, code, body, tt.code, tt.want)
		}
	}
}
