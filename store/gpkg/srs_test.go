package gpkg

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wgs84WKT is EPSG:4326 as GDAL 3.6 writes it into gpkg_spatial_ref_sys.
const wgs84WKT = `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AXIS["Latitude",NORTH],AXIS["Longitude",EAST],AUTHORITY["EPSG","4326"]]`

func TestSpatialRefFor(t *testing.T) {
	tests := []struct {
		name  string
		srid  int
		want  spatialRef
		known bool
	}{
		{
			name: "undefined geographic", srid: 0, known: true,
			want: spatialRef{Name: "Undefined geographic SRS", ID: 0, Organization: "NONE", OrgID: 0, Definition: "undefined", Description: "undefined geographic coordinate reference system"},
		},
		{
			name: "undefined Cartesian", srid: -1, known: true,
			want: spatialRef{Name: "Undefined Cartesian SRS", ID: -1, Organization: "NONE", OrgID: -1, Definition: "undefined", Description: "undefined Cartesian coordinate reference system"},
		},
		{
			name: "WGS 84", srid: 4326, known: true,
			want: spatialRef{Name: "WGS 84 geodetic", ID: 4326, Organization: "EPSG", OrgID: 4326, Definition: wgs84WKT, Description: "longitude/latitude coordinates in decimal degrees on the WGS 84 spheroid"},
		},
		{
			name: "ETRS89 / UTM zone 32N, from its template", srid: 25832, known: true,
			want: spatialRef{Name: "ETRS89 / UTM zone 32N", ID: 25832, Organization: "EPSG", OrgID: 25832,
				Definition: `PROJCS["ETRS89 / UTM zone 32N",GEOGCS["ETRS89",DATUM["European_Terrestrial_Reference_System_1989",SPHEROID["GRS 1980",6378137,298.257222101,AUTHORITY["EPSG","7019"]],AUTHORITY["EPSG","6258"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4258"]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",9],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],AUTHORITY["EPSG","25832"]]`},
		},
		{
			name: "unknown code: EPSG by reference", srid: 3067, known: false,
			want: spatialRef{Name: "EPSG:3067", ID: 3067, Organization: "EPSG", OrgID: 3067, Definition: "undefined"},
		},
		{
			name: "below -1: undefined Cartesian", srid: -7, known: false,
			want: spatialRef{Name: "Undefined Cartesian SRS", ID: -1, Organization: "NONE", OrgID: -1, Definition: "undefined", Description: "undefined Cartesian coordinate reference system"},
		},
		{
			name: "beyond int32: undefined Cartesian", srid: math.MaxInt32 + 1, known: false,
			want: spatialRef{Name: "Undefined Cartesian SRS", ID: -1, Organization: "NONE", OrgID: -1, Definition: "undefined", Description: "undefined Cartesian coordinate reference system"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := spatialRefFor(tt.srid)
			if got != tt.want || known != tt.known {
				t.Errorf("spatialRefFor(%d) = %+v, %v\nwant %+v, %v", tt.srid, got, known, tt.want, tt.known)
			}
		})
	}
}

func TestRequiredRefs(t *testing.T) {
	refs := requiredRefs()
	if len(refs) != 3 {
		t.Fatalf("requiredRefs gave %d rows, want 3", len(refs))
	}
	// 12-128r18 requirement 11 fixes these columns; the names and descriptions are GDAL's.
	want := []struct {
		id           int32
		organization string
		orgID        int32
		definition   string
	}{{4326, "EPSG", 4326, wgs84WKT}, {-1, "NONE", -1, "undefined"}, {0, "NONE", 0, "undefined"}}
	for i, w := range want {
		r := refs[i]
		if r.ID != w.id || r.Organization != w.organization || r.OrgID != w.orgID || r.Definition != w.definition {
			t.Errorf("row %d = %+v, want srs_id %d, organization %s, organization_coordsys_id %d, definition %.40s", i, r, w.id, w.organization, w.orgID, w.definition)
		}
		if r.Name == "" || r.Description == "" {
			t.Errorf("row %d = %+v lacks a name or a description", i, r)
		}
	}
	refs[0].Name = "changed"
	if again := requiredRefs(); again[0].Name != "WGS 84 geodetic" {
		t.Errorf("changing one result of requiredRefs changed the next: %q", again[0].Name)
	}
}

// readSRSDigests reads testdata/srs_gdal.txt: the SHA-256 of GDAL's WKT1 per known code.
func readSRSDigests(t *testing.T) map[int]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "srs_gdal.txt"))
	if err != nil {
		t.Fatalf("opening GDAL's digests: %v", err)
	}
	defer f.Close()
	digests := map[int]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		code, digest, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(code)
		if !ok || err != nil {
			t.Fatalf("srs_gdal.txt: bad line %q", line)
		}
		digests[n] = digest
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading GDAL's digests: %v", err)
	}
	return digests
}

// TestSpatialRefForMatchesGDAL checks every known code, templated or stored, against
// the digest of GDAL's text, and that the known codes are exactly those gen_srs.sh
// asked GDAL for.
func TestSpatialRefForMatchesGDAL(t *testing.T) {
	digests := readSRSDigests(t)
	if len(digests) < 150 {
		t.Fatalf("srs_gdal.txt has %d codes, want the 155 of gen_srs.sh", len(digests))
	}
	for code, digest := range digests {
		ref, known := spatialRefFor(code)
		sum := sha256.Sum256([]byte(ref.Definition))
		if !known || hex.EncodeToString(sum[:]) != digest {
			t.Errorf("EPSG:%d: known %v, definition %.60s... is not GDAL's (SHA-256 %s)", code, known, ref.Definition, digest)
		}
		if ref.ID != int32(code) || ref.OrgID != int32(code) || ref.Organization != "EPSG" || ref.Name == "" ||
			code != 4326 && !strings.Contains(ref.Definition, `["`+ref.Name+`"`) {
			t.Errorf("EPSG:%d: row %+v", code, ref)
		}
	}
	for code := 1; code < 100000; code++ {
		if _, ok := gdalDefinition(code); ok && digests[code] == "" {
			t.Errorf("EPSG:%d has a definition but no GDAL digest in srs_gdal.txt", code)
		}
	}
}

// TestSpatialRefForLiveGDAL compares a few codes with the GDAL on PATH, when there is one.
func TestSpatialRefForLiveGDAL(t *testing.T) {
	if _, err := exec.LookPath("gdalsrsinfo"); err != nil {
		// GDAL is the oracle; make test installs it. A skipped oracle proves nothing.
		t.Fatal("gdalsrsinfo is not on PATH (apt-get install gdal-bin)")
	}
	for _, code := range []int{4326, 3857, 2056, 28992, 25828, 25832, 25838, 32601, 32633, 32760, 26915} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			out, err := exec.Command("gdalsrsinfo", "-o", "wkt1", "--single-line", "EPSG:"+strconv.Itoa(code)).Output()
			if err != nil {
				t.Fatalf("gdalsrsinfo: %v", err)
			}
			ref, _ := spatialRefFor(code)
			if want := strings.TrimSpace(string(out)); ref.Definition != want {
				t.Errorf("definition\n%s\nGDAL gives\n%s\n(run go generate after a GDAL upgrade)", ref.Definition, want)
			}
		})
	}
}

// TestGDALResolvesOurRefs writes our rows into a GeoPackage GDAL created and checks what
// GDAL makes of them: an unknown code's "undefined" row included.
func TestGDALResolvesOurRefs(t *testing.T) {
	python := gdalPython(t)
	codes := []int{4326, 0, -1, 3067, 5514, 25832, 25838, 32760, 2056}
	var in bytes.Buffer
	for _, code := range codes {
		r, _ := spatialRefFor(code)
		row := map[string]any{"srs_name": r.Name, "srs_id": r.ID, "organization": r.Organization,
			"organization_coordsys_id": r.OrgID, "definition": r.Definition, "description": nil}
		if r.Description != "" {
			row["description"] = r.Description
		}
		if err := json.NewEncoder(&in).Encode(row); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(python, filepath.Join("testdata", "srs_gdal.py"))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("srs_gdal.py: %v\n%s", err, stderr.String())
	}

	type resolved struct {
		SRSID      int32   `json:"srs_id"`
		Name       *string `json:"name"`
		Authority  *string `json:"authority"`
		Code       *string `json:"code"`
		SameAsEPSG bool    `json:"same_as_epsg"`
		Warnings   []string
	}
	var gdalRows []map[string]any
	var got []resolved
	for line := range strings.Lines(string(out)) {
		var v struct {
			GDALRow  map[string]any `json:"gdal_row"`
			Resolved *resolved
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("srs_gdal.py printed %q: %v", line, err)
		}
		if v.GDALRow != nil {
			gdalRows = append(gdalRows, v.GDALRow)
		}
		if v.Resolved != nil {
			got = append(got, *v.Resolved)
		}
	}

	t.Run("required rows are GDAL's", func(t *testing.T) {
		byID := map[int32]spatialRef{}
		for _, r := range requiredRefs() {
			byID[r.ID] = r
		}
		if len(gdalRows) != 3 {
			t.Fatalf("GDAL wrote %d of the rows 4326, -1, 0", len(gdalRows))
		}
		for _, g := range gdalRows {
			r := byID[int32(g["srs_id"].(float64))]
			if g["srs_name"] != r.Name || g["organization"] != r.Organization || int32(g["organization_coordsys_id"].(float64)) != r.OrgID ||
				g["definition"] != r.Definition || g["description"] != r.Description {
				t.Errorf("GDAL's row %v\nours        %+v", g, r)
			}
		}
	})

	if len(got) != len(codes) {
		t.Fatalf("GDAL resolved %d layers, want %d", len(got), len(codes))
	}
	for i, code := range codes {
		g := got[i]
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			if len(g.Warnings) > 0 {
				t.Errorf("GDAL warned: %q", g.Warnings)
			}
			if g.Name == nil {
				t.Fatalf("GDAL resolved no SRS for srs_id %d", g.SRSID)
			}
			switch code {
			case 0:
				if *g.Name != "Undefined geographic SRS" {
					t.Errorf("GDAL resolved %q", *g.Name)
				}
			case -1:
				if *g.Name != "Undefined Cartesian SRS" {
					t.Errorf("GDAL resolved %q", *g.Name)
				}
			default:
				if g.Authority == nil || *g.Authority != "EPSG" || g.Code == nil || *g.Code != strconv.Itoa(code) || !g.SameAsEPSG {
					t.Errorf("GDAL resolved %q as %v:%v, same as EPSG's %v", *g.Name, deref(g.Authority), deref(g.Code), g.SameAsEPSG)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
