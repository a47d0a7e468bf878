#!/usr/bin/env python3
"""GDAL as the oracle for srs.go's gpkg_spatial_ref_sys rows. Needs GDAL's Python
bindings (osgeo; Debian: python3-gdal).

  srs_gdal.py < rows

reads JSON rows (one per line: srs_name, srs_id, organization, organization_coordsys_id,
definition, description), has GDAL create a GeoPackage, prints the rows GDAL wrote for
srs_id 4326, -1 and 0 (JSON, "gdal_row"), writes our rows over GDAL's with sqlite3, points
one layer at each, and prints what GDAL resolves for each layer ("resolved": name,
authority, code, whether it is the same CRS as GDAL's own EPSG definition of the code, and
the warnings GDAL gave).
"""

import json
import os
import sqlite3
import sys
import tempfile

from osgeo import gdal, ogr, osr

gdal.UseExceptions()
ogr.UseExceptions()

rows = [json.loads(line) for line in sys.stdin if line.strip()]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "srs.gpkg")
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(path)
    for i, _ in enumerate(rows):
        ds.CreateLayer("l%d" % i, None, ogr.wkbPoint)
    ds = None

    db = sqlite3.connect(path)
    cols = "srs_name, srs_id, organization, organization_coordsys_id, definition, description"
    for r in db.execute("SELECT %s FROM gpkg_spatial_ref_sys WHERE srs_id IN (4326, -1, 0) ORDER BY srs_id" % cols):
        print(json.dumps({"gdal_row": dict(zip(cols.split(", "), r))}))
    for i, r in enumerate(rows):
        db.execute("INSERT OR REPLACE INTO gpkg_spatial_ref_sys (%s) VALUES (?, ?, ?, ?, ?, ?)" % cols,
                   [r["srs_name"], r["srs_id"], r["organization"], r["organization_coordsys_id"],
                    r["definition"], r["description"]])
        for table in ("gpkg_geometry_columns", "gpkg_contents"):
            db.execute("UPDATE %s SET srs_id = ? WHERE table_name = ?" % table, [r["srs_id"], "l%d" % i])
    db.commit()
    db.close()

    warnings = []

    def handler(cls, num, msg):
        if cls >= gdal.CE_Warning:
            warnings.append(msg)

    gdal.PushErrorHandler(handler)
    ds = ogr.Open(path)
    for i, r in enumerate(rows):
        warnings.clear()
        s = ds.GetLayerByName("l%d" % i).GetSpatialRef()
        out = {"srs_id": r["srs_id"], "name": None, "authority": None, "code": None, "same_as_epsg": False}
        if s is not None:
            out.update(name=s.GetName(), authority=s.GetAuthorityName(None), code=s.GetAuthorityCode(None))
            if r["srs_id"] > 0:
                e = osr.SpatialReference()
                e.ImportFromEPSG(r["srs_id"])
                out["same_as_epsg"] = bool(s.IsSame(e, ["IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING=YES"]))
        out["warnings"] = list(warnings)
        print(json.dumps({"resolved": out}))
    gdal.PopErrorHandler()
