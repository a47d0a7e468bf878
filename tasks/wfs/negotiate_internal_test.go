package wfs

import (
	"strings"
	"testing"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/store"
)

func TestChooseVersion(t *testing.T) {
	tests := []struct {
		name, configured, advertised, want string
	}{
		{name: "auto takes the server's", configured: "auto", advertised: "1.1.0", want: "1.1.0"},
		{name: "unset takes the server's", configured: "", advertised: "2.0.0", want: "2.0.0"},
		{name: "configured wins", configured: "1.0.0", advertised: "2.0.0", want: "1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chooseVersion(tt.configured, tt.advertised); got != tt.want {
				t.Errorf("chooseVersion(%q, %q) = %q, want %q", tt.configured, tt.advertised, got, tt.want)
			}
		})
	}
}

func TestSRSName(t *testing.T) {
	tests := []struct {
		name       string
		configured string
		srid       int
		version    string
		geoJSON    bool
		want       string
	}{
		{name: "geojson gets the short form", configured: "urn:ogc:def:crs:EPSG::4326", srid: 4326, version: "2.0.0", geoJSON: true, want: "EPSG:4326"},
		{name: "geojson in 1.0 too", configured: "EPSG:25832", srid: 25832, version: "1.0.0", geoJSON: true, want: "EPSG:25832"},
		{name: "gml 2.0 gets the urn", configured: "EPSG:4326", srid: 4326, version: "2.0.0", want: "urn:ogc:def:crs:EPSG::4326"},
		{name: "gml 1.1 gets the urn", configured: "EPSG:3857", srid: 3857, version: "1.1.0", want: "urn:ogc:def:crs:EPSG::3857"},
		{name: "gml 1.0 keeps the configured", configured: "EPSG:4326", srid: 4326, version: "1.0.0", want: "EPSG:4326"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := srsName(tt.configured, tt.srid, tt.version, tt.geoJSON); got != tt.want {
				t.Errorf("srsName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHarvestAreaChoice(t *testing.T) {
	extent := &orb.Bound{Min: orb.Point{5, 47}, Max: orb.Point{15, 55}}
	tests := []struct {
		name           string
		bbox           *[4]float64
		bboxCRS        string
		ft             FeatureType
		want           orb.Bound
		wantAdvertised bool
		wantErr        string
	}{
		{name: "configured lon/lat", bbox: &[4]float64{1, 2, 3, 4}, bboxCRS: "EPSG:4326", ft: FeatureType{WGS84: extent},
			want: orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}},
		{name: "configured mercator is converted", bbox: &[4]float64{0, 0, 0, 0}, bboxCRS: "epsg:3857",
			want: orb.Bound{Min: orb.Point{0, 0}, Max: orb.Point{0, 0}}},
		{name: "advertised extent", ft: FeatureType{Name: "x", WGS84: extent}, want: *extent, wantAdvertised: true},
		{name: "neither", ft: FeatureType{Name: "ns:roads"}, wantErr: `advertises no extent for "ns:roads"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, advertised, err := harvestArea(tt.bbox, tt.bboxCRS, &tt.ft)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || advertised != tt.wantAdvertised {
				t.Errorf("harvestArea = %v, %v, %v; want %v, %v", got, advertised, err, tt.want, tt.wantAdvertised)
			}
		})
	}
}

func TestCheckFilter(t *testing.T) {
	tests := []struct {
		name    string
		filter  string
		noStd   bool
		wantErr bool
	}{
		{name: "no filter", noStd: true},
		{name: "filter, server can", filter: "<Filter/>"},
		{name: "filter, server cannot", filter: "<Filter/>", noStd: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFilter(tt.filter, &Capabilities{NoStandardFilter: tt.noStd})
			if (err != nil) != tt.wantErr {
				t.Errorf("checkFilter = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestSortProperty(t *testing.T) {
	cols := []store.Column{{Name: "id", Property: "ID"}, {Name: "name", Property: "Name"}}
	props := []Property{{Name: "Name"}, {Name: "ID"}}
	tests := []struct {
		name       string
		configured string
		key        []string
		props      []Property
		want       string
	}{
		{name: "configured wins", configured: "Other", key: []string{"id"}, props: props, want: "Other"},
		{name: "the key's property", key: []string{"id"}, props: props, want: "ID"},
		{name: "a key without a column falls to the first property", key: []string{"gone"}, props: props, want: "Name"},
		{name: "the first property", props: props, want: "Name"},
		{name: "nothing to sort by", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sortProperty(tt.configured, tt.key, cols, tt.props); got != tt.want {
				t.Errorf("sortProperty = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPageSize(t *testing.T) {
	tests := []struct {
		name                     string
		countDefault, configured int
		want                     int64
	}{
		{name: "defaults", want: defaultPageSize},
		{name: "the server's", countDefault: 500, want: 500},
		{name: "configured without the server's", configured: 5000, want: 5000},
		{name: "configured below the server's", countDefault: 500, configured: 200, want: 200},
		{name: "configured above the server's is capped", countDefault: 500, configured: 800, want: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pageSize(tt.countDefault, tt.configured); got != tt.want {
				t.Errorf("pageSize(%d, %d) = %d, want %d", tt.countDefault, tt.configured, got, tt.want)
			}
		})
	}
}

func TestParseCapabilitiesByVersion(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want Capabilities
	}{
		{name: "2.0 counts by definition", doc: `<WFS_Capabilities version="2.0.0"/>`,
			want: Capabilities{Version: "2.0.0", Hits: true}},
		{name: "2.0 constraints", doc: `<WFS_Capabilities version="2.0.0"><OperationsMetadata>
			<Constraint name="CountDefault"><DefaultValue>500</DefaultValue></Constraint>
			<Constraint name="DefaultMaxFeatures"><AllowedValues><Value>200</Value></AllowedValues></Constraint>
			<Constraint name="ImplementsSorting"><DefaultValue>TRUE</DefaultValue></Constraint>
			<Constraint name="ImplementsResultPaging"><DefaultValue>true</DefaultValue></Constraint>
			<Constraint name="ImplementsMinStandardFilter"><DefaultValue>false</DefaultValue></Constraint>
			</OperationsMetadata></WFS_Capabilities>`,
			want: Capabilities{Version: "2.0.0", Hits: true, CountDefault: 200, ImplementsSorting: true, Paging: true, NoStandardFilter: true}},
		{name: "1.1 pages and counts", doc: `<WFS_Capabilities version="1.1.0"><Operation name="GetFeature">
			<Parameter name="outputFormat"><Value>text/xml; subtype=gml/3.1.1</Value><Value>application/json</Value></Parameter>
			</Operation><Filter_Capabilities><Logical_Operators/></Filter_Capabilities></WFS_Capabilities>`,
			want: Capabilities{Version: "1.1.0", Hits: true, Paging: true, OutputFormats: []string{"text/xml; subtype=gml/3.1.1", "application/json"}}},
		{name: "1.1 without logical operators", doc: `<WFS_Capabilities version="1.1.0"><Filter_Capabilities><Spatial_Capabilities/></Filter_Capabilities></WFS_Capabilities>`,
			want: Capabilities{Version: "1.1.0", Hits: true, Paging: true, NoStandardFilter: true}},
		{name: "1.0 result formats, no hits", doc: `<WFS_Capabilities><Capability><Request><GetFeature><ResultFormat><GML2/><GeoJSON/></ResultFormat></GetFeature></Request></Capability></WFS_Capabilities>`,
			want: Capabilities{Version: "1.0.0", Paging: true, OutputFormats: []string{"GML2", "GeoJSON"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := parseDOM(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseCapabilities(root)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tt.want.Version || got.Hits != tt.want.Hits || got.Paging != tt.want.Paging ||
				got.CountDefault != tt.want.CountDefault || got.ImplementsSorting != tt.want.ImplementsSorting ||
				got.NoStandardFilter != tt.want.NoStandardFilter || strings.Join(got.OutputFormats, "|") != strings.Join(tt.want.OutputFormats, "|") {
				t.Errorf("parseCapabilities = %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestParseFeatureType(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want FeatureType
	}{
		{name: "2.0", doc: `<FeatureType><Name>ns:a</Name><DefaultCRS>urn:ogc:def:crs:EPSG::4326</DefaultCRS><OtherCRS>EPSG:3857</OtherCRS>
			<WGS84BoundingBox><LowerCorner>1 2</LowerCorner><UpperCorner>3 4</UpperCorner></WGS84BoundingBox></FeatureType>`,
			want: FeatureType{Name: "ns:a", DefaultCRS: "urn:ogc:def:crs:EPSG::4326", OtherCRS: []string{"EPSG:3857"},
				WGS84: &orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}}},
		{name: "1.0", doc: `<FeatureType><Name>a</Name><SRS>EPSG:4326</SRS><LatLongBoundingBox minx="1" miny="2" maxx="3" maxy="4"/></FeatureType>`,
			want: FeatureType{Name: "a", DefaultCRS: "EPSG:4326", WGS84: &orb.Bound{Min: orb.Point{1, 2}, Max: orb.Point{3, 4}}}},
		{name: "1.0 box not numbers", doc: `<FeatureType><Name>a</Name><LatLongBoundingBox minx="1" miny="x" maxx="3" maxy="4"/></FeatureType>`,
			want: FeatureType{Name: "a"}},
		{name: "2.0 box half given", doc: `<FeatureType><Name>a</Name><WGS84BoundingBox><LowerCorner>1 2</LowerCorner></WGS84BoundingBox></FeatureType>`,
			want: FeatureType{Name: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := parseDOM(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got := parseFeatureType(root)
			if got.Name != tt.want.Name || got.DefaultCRS != tt.want.DefaultCRS || strings.Join(got.OtherCRS, "|") != strings.Join(tt.want.OtherCRS, "|") ||
				(got.WGS84 == nil) != (tt.want.WGS84 == nil) || got.WGS84 != nil && *got.WGS84 != *tt.want.WGS84 {
				t.Errorf("parseFeatureType = %+v, want %+v", got, tt.want)
			}
		})
	}
}
