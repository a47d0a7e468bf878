package ogcapi

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// TestUnknownPropertyLogged: a property the sample did not show has no column; it is
// logged once by name instead of vanishing in silence.
func TestUnknownPropertyLogged(t *testing.T) {
	var logs bytes.Buffer
	env := &tasks.Env{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	tk := &Task{}
	p := &prepared{columns: map[string]bool{"a": true}, table: &store.FeatureTable{Schema: "public", Name: "t"}}
	body := `{"type":"FeatureCollection","features":[
{"type":"Feature","id":"1","properties":{"a":1,"late":"x"},"geometry":null},
{"type":"Feature","id":"2","properties":{"a":2,"late":"y"},"geometry":null}]}`
	d := &unknownProps{Reader: geojson.NewReader(strings.NewReader(body), geojson.Options{}), p: p, t: tk, env: env}
	for {
		if _, err := d.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "property=late"); n != 1 {
		t.Errorf("the unknown property was logged %d times, want once:\n%s", n, logs.String())
	}
}
