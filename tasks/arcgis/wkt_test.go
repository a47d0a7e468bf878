package arcgis_test

import (
	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"
)

func wktOf(g orb.Geometry) string { return wkt.MarshalString(g) }
