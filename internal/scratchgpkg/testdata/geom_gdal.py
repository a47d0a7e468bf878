#!/usr/bin/env python3
"""GDAL as the oracle for geom.go's GeoPackage geometry blobs. Needs GDAL's Python
bindings (osgeo; Debian: python3-gdal).

  geom_gdal.py generate > geom_gdal.txt
      GDAL writes each case below into a GeoPackage; prints one line per case:
      name, srs_id, the blob in hex, and the expected geometry as GDAL's ISO WKT with Z
      and M dropped, or "ERROR <what the error must name>" for types orb cannot hold.

  geom_gdal.py check < blobs
      reads lines "name<TAB>srs_id<TAB>hex" (blobs from encodeGeometry), has GDAL insert
      them into a GeoPackage with an R-tree index (whose triggers call GDAL's ST_MinX...
      on each blob) and read them back; prints one JSON object per line with GDAL's WKT,
      ST_MinX/MaxX/MinY/MaxY, ST_IsEmpty and ST_SRID of the blob, and the R-tree row count.
"""

import json
import os
import sys
import tempfile

from osgeo import gdal, ogr, osr

gdal.UseExceptions()
ogr.UseExceptions()

# name, srs_id (None: a layer without SRS), WKT.
CASES = [
    ("point", 4326, "POINT (1.5 -2.25)"),
    ("point_utm", 25832, "POINT (500000.125 5700000.5)"),
    ("point_nosrs", None, "POINT (3 4)"),
    ("multipoint", 4326, "MULTIPOINT ((1 2),(3 4))"),
    ("linestring", 4326, "LINESTRING (0 0,1 1,2 0.5)"),
    ("multilinestring", 4326, "MULTILINESTRING ((0 0,1 1),(2 2,3 3,4 2))"),
    ("polygon", 4326, "POLYGON ((0 0,10 0,10 10,0 10,0 0))"),
    ("polygon_hole", 25832, "POLYGON ((0 0,10 0,10 10,0 10,0 0),(2 2,2 4,4 4,4 2,2 2))"),
    ("multipolygon", 4326, "MULTIPOLYGON (((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5),(5.25 5.125,5.75 5.125,5.75 5.5,5.25 5.125)))"),
    ("collection", 4326, "GEOMETRYCOLLECTION (POINT (1 2),LINESTRING (0 0,3 3),POLYGON ((0 0,1 0,1 1,0 0)))"),
    ("collection_nested", 4326, "GEOMETRYCOLLECTION (GEOMETRYCOLLECTION (POINT (-1 -2)),MULTIPOINT ((7 8)))"),
    ("point_empty", 4326, "POINT EMPTY"),
    ("linestring_empty", 4326, "LINESTRING EMPTY"),
    ("polygon_empty", 4326, "POLYGON EMPTY"),
    ("multipoint_empty", 4326, "MULTIPOINT EMPTY"),
    ("multilinestring_empty", 4326, "MULTILINESTRING EMPTY"),
    ("multipolygon_empty", 4326, "MULTIPOLYGON EMPTY"),
    ("collection_empty", 4326, "GEOMETRYCOLLECTION EMPTY"),
    ("collection_of_empty_point", 4326, "GEOMETRYCOLLECTION (POINT EMPTY)"),
    ("point_z", 4326, "POINT Z (1 2 3)"),
    ("point_m", 4326, "POINT M (1 2 4)"),
    ("point_zm", 4326, "POINT ZM (1 2 3 4)"),
    ("linestring_z", 4326, "LINESTRING Z (0 0 1,1 1 2,2 0 3)"),
    ("linestring_m", 4326, "LINESTRING M (0 0 1,1 1 2)"),
    ("linestring_zm", 4326, "LINESTRING ZM (0 0 1 2,1 1 3 4)"),
    ("polygon_z_hole", 4326, "POLYGON Z ((0 0 1,10 0 1,10 10 1,0 10 1,0 0 1),(2 2 5,2 4 5,4 4 5,2 2 5))"),
    ("multipoint_zm", 4326, "MULTIPOINT ZM ((1 2 3 4),(5 6 7 8))"),
    ("multilinestring_m", 4326, "MULTILINESTRING M ((0 0 1,1 1 2),(5 5 3,6 6 4))"),
    ("multipolygon_z", 4326, "MULTIPOLYGON Z (((0 0 1,1 0 1,1 1 1,0 0 1)))"),
    ("collection_zm", 4326, "GEOMETRYCOLLECTION ZM (POINT ZM (1 2 3 4),LINESTRING ZM (0 0 0 0,1 1 1 1))"),
    ("point_z_empty", 4326, "POINT Z EMPTY"),
    ("circularstring", 4326, "CIRCULARSTRING (0 0,1 1,2 0)"),
    ("compoundcurve", 4326, "COMPOUNDCURVE ((0 0,1 1),CIRCULARSTRING (1 1,2 2,3 1))"),
    ("curvepolygon", 4326, "CURVEPOLYGON (CIRCULARSTRING (0 0,2 0,0 0))"),
    ("multicurve", 4326, "MULTICURVE ((0 0,1 1))"),
    ("multisurface", 4326, "MULTISURFACE (((0 0,1 0,1 1,0 0)))"),
    ("collection_with_curve", 4326, "GEOMETRYCOLLECTION (POINT (1 2),CIRCULARSTRING (0 0,1 1,2 0))"),
]

# ISO type codes orb cannot hold, as geom.go's errors name them.
CURVE_NAMES = {
    ogr.wkbCircularString: "CircularString",
    ogr.wkbCompoundCurve: "CompoundCurve",
    ogr.wkbCurvePolygon: "CurvePolygon",
    ogr.wkbMultiCurve: "MultiCurve",
    ogr.wkbMultiSurface: "MultiSurface",
}


def srs_for(code):
    if code is None:
        return None
    s = osr.SpatialReference()
    s.ImportFromEPSG(code)
    return s


def expected(g):
    """ISO WKT with Z and M dropped, or ERROR naming the first curve type inside g."""
    t = ogr.GT_Flatten(g.GetGeometryType())
    if t in CURVE_NAMES:
        return "ERROR " + CURVE_NAMES[t]
    if t == ogr.wkbGeometryCollection:
        for i in range(g.GetGeometryCount()):
            e = expected(g.GetGeometryRef(i))
            if e.startswith("ERROR"):
                return e
    f = g.Clone()
    f.FlattenTo2D()
    return f.ExportToIsoWkt()


def generate():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gdal.gpkg")
        ds = ogr.GetDriverByName("GPKG").CreateDataSource(path)
        layers = {}
        for name, code, wkt in CASES:
            if code not in layers:
                lyr = ds.CreateLayer("t%s" % (code if code is not None else "none"), srs_for(code), ogr.wkbUnknown)
                lyr.CreateField(ogr.FieldDefn("name", ogr.OFTString))
                layers[code] = lyr
            lyr = layers[code]
            f = ogr.Feature(lyr.GetLayerDefn())
            f.SetField("name", name)
            f.SetGeometry(ogr.CreateGeometryFromWkt(wkt))
            lyr.CreateFeature(f)
        ds = None

        ds = ogr.Open(path)
        print("# Written by geom_gdal.py generate with GDAL %s: name, srs_id, GeoPackage blob as GDAL wrote it," % gdal.__version__)
        print("# expected geometry (GDAL's ISO WKT, Z and M dropped) or ERROR and what the error must name.")
        for name, code, wkt in CASES:
            lyr = ds.GetLayerByName("t%s" % (code if code is not None else "none"))
            sql = ds.ExecuteSQL("SELECT hex(geom), ST_SRID(geom) FROM \"%s\" WHERE name = '%s'" % (lyr.GetName(), name))
            row = sql.GetNextFeature()
            blob, srid = row.GetField(0), row.GetField(1)
            ds.ReleaseResultSet(sql)
            print("\t".join([name, str(srid), blob, expected(ogr.CreateGeometryFromWkt(wkt))]))


def check():
    rows = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        name, srs, blob = line.split("\t")
        rows.append((name, int(srs), blob))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ours.gpkg")
        ds = ogr.GetDriverByName("GPKG").CreateDataSource(path)
        tables = {}
        for name, srs, blob in rows:
            if srs not in tables:
                table = "t%d" % len(tables)
                code = srs if srs > 0 else None
                lyr = ds.CreateLayer(table, srs_for(code), ogr.wkbUnknown, ["SPATIAL_INDEX=YES"])
                lyr.CreateField(ogr.FieldDefn("name", ogr.OFTString))
                tables[srs] = table
            # Through GDAL's own connection, so that the R-tree triggers run GDAL's
            # ST_IsEmpty, ST_MinX... on our blob.
            ds.ExecuteSQL("INSERT INTO \"%s\" (name, geom) VALUES ('%s', X'%s')" % (tables[srs], name, blob))
        ds = None

        ds = ogr.Open(path)
        for name, srs, blob in rows:
            table = tables[srs]
            lyr = ds.GetLayerByName(table)
            lyr.SetAttributeFilter("name = '%s'" % name)
            f = lyr.GetNextFeature()
            g = f.GetGeometryRef()
            sql = ds.ExecuteSQL(
                "SELECT ST_MinX(geom), ST_MaxX(geom), ST_MinY(geom), ST_MaxY(geom), ST_IsEmpty(geom), ST_SRID(geom), "
                "(SELECT count(*) FROM \"rtree_%s_geom\" r WHERE r.id = t.fid) FROM \"%s\" t WHERE name = '%s'" % (table, table, name))
            row = sql.GetNextFeature()
            out = {
                "name": name,
                "wkt": g.ExportToIsoWkt() if g is not None else None,
                "minx": row.GetField(0), "maxx": row.GetField(1),
                "miny": row.GetField(2), "maxy": row.GetField(3),
                "empty": row.GetField(4), "srid": row.GetField(5),
                "rtree": row.GetField(6),
            }
            ds.ReleaseResultSet(sql)
            print(json.dumps(out))


if __name__ == "__main__":
    {"generate": generate, "check": check}[sys.argv[1]]()
