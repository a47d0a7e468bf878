// Package migrations holds geoflow's bookkeeping schema as numbered SQL files
// (NNN_name.up.sql, with an optional NNN_name.down.sql), embedded in the binary, one
// folder per store: postgis/ in PostgreSQL's dialect, gpkg/ in SQLite's for GeoPackage
// files. A migration that has shipped is never edited: change the schema with a new file.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
)

//go:embed postgis/*.sql gpkg/*.sql
var files embed.FS

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string // empty when the migration has no down step
}

var fileRE = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// PostGIS returns the migrations of the PostgreSQL store, in version order.
func PostGIS() ([]Migration, error) { return load("postgis") }

// GeoPackage returns the migrations of the GeoPackage store, in version order.
func GeoPackage() ([]Migration, error) { return load("gpkg") }

// load returns the embedded migrations of dir in version order. It fails on a misnamed
// file or a number used twice. A number may be skipped: the stores record each version
// they applied, not the highest, so a step whose number was held for work landing later
// is applied when it arrives, whatever came after it meanwhile.
func load(dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: reading embedded files: %w", err)
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := fileRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migrations: %q is not named NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		body, err := fs.ReadFile(files, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: reading %s: %w", e.Name(), err)
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		} else if mig.Name != m[2] {
			return nil, fmt.Errorf("migrations: version %03d is used by both %q and %q", v, mig.Name, m[2])
		}
		if m[3] == "up" {
			mig.Up = string(body)
		} else {
			mig.Down = string(body)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.Up == "" {
			return nil, fmt.Errorf("migrations: %03d_%s has no .up.sql", m.Version, m.Name)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}
