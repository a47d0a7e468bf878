package gpkg

import (
	"database/sql/driver"
	"net/url"
	"strings"

	"modernc.org/sqlite"
)

// registerFunctions registers, for every connection the driver opens, the SQL functions
// that the GeoPackage R-tree triggers call (ST_MinX, ST_MaxX, ST_MinY, ST_MaxY,
// ST_IsEmpty, as GDAL and QGIS also define them, and PostGIS's ST_XMin, ST_XMax, ST_YMin,
// ST_YMax for SQL steps written for both stores), so that a file whose triggers another
// tool created stays writable here, and gf_url_host for the dead-letter statistics and
// host filter.
func registerFunctions() error {
	coord := func(pick func(minx, maxx, miny, maxy float64) float64) func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		return func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			b, ok := args[0].([]byte)
			if !ok {
				return nil, nil
			}
			env, empty, err := blobEnvelope(b)
			if err != nil || empty {
				return nil, nil //nolint:nilerr // not a geometry: NULL, as GDAL's functions answer
			}
			return pick(env.Min[0], env.Max[0], env.Min[1], env.Max[1]), nil
		}
	}
	fns := map[string]func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error){
		"ST_MinX": coord(func(minx, _, _, _ float64) float64 { return minx }),
		"ST_MaxX": coord(func(_, maxx, _, _ float64) float64 { return maxx }),
		"ST_MinY": coord(func(_, _, miny, _ float64) float64 { return miny }),
		"ST_MaxY": coord(func(_, _, _, maxy float64) float64 { return maxy }),
		// PostGIS's names for the same corners, so that a SQL step can be written once
		// for both stores.
		"ST_XMin": coord(func(minx, _, _, _ float64) float64 { return minx }),
		"ST_XMax": coord(func(_, maxx, _, _ float64) float64 { return maxx }),
		"ST_YMin": coord(func(_, _, miny, _ float64) float64 { return miny }),
		"ST_YMax": coord(func(_, _, _, maxy float64) float64 { return maxy }),
		"ST_IsEmpty": func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			b, ok := args[0].([]byte)
			if !ok {
				return nil, nil
			}
			_, empty, err := blobEnvelope(b)
			if err != nil {
				return nil, nil //nolint:nilerr // not a geometry: NULL
			}
			return empty, nil
		},
		"gf_url_host": func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			s, _ := args[0].(string)
			if s == "" {
				return "", nil
			}
			u, err := url.Parse(s)
			if err != nil {
				return "", nil //nolint:nilerr // no host to group by
			}
			// Lower-cased, as PostGIS's hostExpr: the host is one key however a URL spelled it.
			return strings.ToLower(u.Host), nil
		},
	}
	for name, fn := range fns {
		if err := sqlite.RegisterDeterministicScalarFunction(name, 1, fn); err != nil {
			return err
		}
	}
	return nil
}
