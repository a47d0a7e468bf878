// Package mvt encodes Mapbox Vector Tiles of stored features, the same way for every
// store: one layer, version 2, extent 4096; geometries projected to tile units, clipped
// to the tile and a buffer around it, simplified by a tile unit (all a tile can show),
// those left smaller than a unit dropped. It wraps orb's encoding/mvt.
package mvt

import (
	"fmt"
	"math"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/project"
	"github.com/paulmach/orb/simplify"
)

// Buffer is how far beyond its tile, in tile units (4096 across), a tile's geometries
// reach, so that lines and outlines drawn across tile edges join (PostGIS's
// ST_AsMVTGeom default). mvt.MapboxGLDefaultExtentBound would keep a whole tile around.
const Buffer = 64

// clip is the box a tile's geometries are clipped to, in tile units.
var clip = orb.Bound{Min: orb.Point{-Buffer, -Buffer}, Max: orb.Point{4096 + Buffer, 4096 + Buffer}}

// worldHalf is half the side of the Web Mercator square, in metres.
const worldHalf = 20037508.342789244

// Feature is one feature of a tile.
type Feature struct {
	ID uint64
	// Geometry is in lon/lat, or in Web Mercator metres when Encode is told so. Encode
	// projects it in place: the caller's geometry is spent.
	Geometry   orb.Geometry
	Properties map[string]any
}

// Encode encodes features as tile's MVT, one layer named layer, and returns it and how
// many features it holds; nil and 0 when none is left. mercator says the geometries are
// in Web Mercator metres rather than lon/lat.
func Encode(layer string, tile maptile.Tile, mercator bool, features []Feature) ([]byte, int, error) {
	fs := make([]*geojson.Feature, 0, len(features))
	toTile := mercatorToTile(tile)
	for i := range features {
		g := features[i].Geometry
		if mercator {
			g = project.Geometry(g, toTile)
		}
		f := geojson.NewFeature(g)
		f.ID = features[i].ID
		f.Properties = features[i].Properties
		fs = append(fs, f)
	}
	l := &mvt.Layer{Name: layer, Version: 2, Extent: mvt.DefaultExtent, Features: fs}
	if !mercator {
		l.ProjectToTile(tile)
	}
	l.Clip(clip)
	l.Simplify(simplify.DouglasPeucker(1))
	l.RemoveEmpty(1, 1)
	if len(l.Features) == 0 {
		return nil, 0, nil
	}
	data, err := mvt.Marshal(mvt.Layers{l})
	if err != nil {
		return nil, 0, fmt.Errorf("encoding tile %d/%d/%d: %w", tile.Z, tile.X, tile.Y, err)
	}
	return data, len(l.Features), nil
}

// mercatorToTile projects Web Mercator metres to tile's units, as Layer.ProjectToTile
// projects lon/lat (rounded down to the unit).
func mercatorToTile(tile maptile.Tile) orb.Projection {
	n := float64(uint64(1) << (uint(tile.Z) + 12))
	x0, y0 := float64(uint64(tile.X)<<12), float64(uint64(tile.Y)<<12)
	return func(p orb.Point) orb.Point {
		return orb.Point{math.Floor((p[0]/(2*worldHalf)+0.5)*n - x0), math.Floor((0.5-p[1]/(2*worldHalf))*n - y0)}
	}
}
