// Package proj converts coordinates between WGS 84 longitude/latitude and the projected
// coordinate reference systems geoflow can compute without PROJ: Web Mercator, the
// transverse Mercator grids (the WGS 84, ETRS89 and NAD83 UTM zones), ETRS89-LAEA Europe
// and Lambert-93. It is a pure function library: every value is immutable and safe for
// concurrent use.
//
// Coordinates are always x/y: longitude then latitude in degrees, easting then northing
// in metres, whatever axis order the EPSG registry gives a CRS. ETRS89, NAD83 and RGF93
// longitudes and latitudes are taken as WGS 84's: PROJ, and so GDAL and PostGIS, use the
// null transformation between them unless a grid is installed (ETRS89 to WGS 84 (1),
// NAD83 to WGS 84 (1), RGF93 v1 to WGS 84 (1)), and so does this package.
//
// The transverse Mercator is Krüger's series in n to the sixth order, as in Karney,
// "Transverse Mercator with an accuracy of a few nanometers" (J. Geodesy 85, 2011) and
// PROJ's default tmerc (Poder/Engsager): within a few nanometres of the exact mapping up
// to several thousand kilometres from the central meridian. testdata/proj.txt holds
// PROJ's answers for a grid of points over every supported CRS's area of use, and the
// tests hold this package to them within a millimetre.
package proj
