package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/project"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
)

// layer is the layer document (?f=json).
type layer struct {
	ID             int     `json:"id"`
	Name           string  `json:"name"`
	CurrentVersion float64 `json:"currentVersion"`
	Type           string  `json:"type"`
	GeometryType   string  `json:"geometryType"`
	ObjectIDField  string  `json:"objectIdField"`
	MaxRecordCount int     `json:"maxRecordCount"`
	Fields         []field `json:"fields"`
	// What the layer's queries can do (geoflow inspect).
	SupportsPagination        bool `json:"supportsPagination"`
	SupportsAdvancedQueries   bool `json:"supportsAdvancedQueries"`
	AdvancedQueryCapabilities struct {
		SupportsPagination bool `json:"supportsPagination"`
		SupportsOrderBy    bool `json:"supportsOrderBy"`
	} `json:"advancedQueryCapabilities"`
	SupportedQueryFormats string `json:"supportedQueryFormats"`
	// Extent is read apart, leniently: an empty layer may state "NaN" coordinates, which
	// must not make the whole document unreadable when bbox is set.
	Extent json.RawMessage `json:"extent"`
}

// field is one attribute of a layer.
type field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// extent is a layer's extent.
type extent struct {
	XMin, YMin, XMax, YMax float64
	SpatialReference       struct {
		WKID       int `json:"wkid"`
		LatestWKID int `json:"latestWkid"`
	} `json:"spatialReference"`
}

// readLayer reads the layer document.
func (t *Task) readLayer(ctx context.Context, env *tasks.Env) (*layer, error) {
	var l layer
	if err := t.readDoc(ctx, env, "layer", t.cfg.URL, &l); err != nil {
		return nil, fmt.Errorf("reading the layer %s: %w", redact.URL(t.cfg.URL), err)
	}
	return &l, nil
}

// readDoc reads the JSON document at u (?f=json) into v.
func (t *Task) readDoc(ctx context.Context, env *tasks.Env, unit, u string, v any) error {
	return env.HTTP.Do(ctx, t.request(env, unit, http.MethodGet, u, url.Values{"f": {"json"}}), func(resp *http.Response) error {
		body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		if err != nil {
			return retry.Transient(dlq.ClassTruncated, err)
		}
		if err := serviceError(body); err != nil {
			return err
		}
		if err := json.Unmarshal(body, v); err != nil {
			return retry.Permanent(dlq.ClassParse, fmt.Errorf("the document is not JSON: %w (%s)", err, spatial.Snippet(body, 200)))
		}
		return nil
	})
}

// checkLayer refuses a layer that cannot be harvested: a table without geometry, or one
// naming no object id field to fetch features by.
func checkLayer(l *layer, layerURL string) error {
	if l.Type == "Table" || l.GeometryType == "" {
		return fmt.Errorf("%s is a table without geometry; geoflow harvests feature layers", redact.URL(layerURL))
	}
	if l.ObjectIDField == "" {
		return fmt.Errorf("the layer %s names no objectIdField: it cannot be harvested by object id", redact.URL(layerURL))
	}
	return nil
}

// batchSize decides the object ids asked for per request: the layer's maxRecordCount
// (1000 when it states none), or the configured batch size where that is smaller.
func batchSize(maxRecordCount, configured int) int {
	batch := max(maxRecordCount, 1)
	if maxRecordCount <= 0 {
		batch = 1000
	}
	if configured > 0 && configured < batch {
		batch = configured
	}
	return batch
}

// layerProperties decides which of the layer's fields become columns: every attribute
// (columnType), or with outFields only those and the object id. dates are the fields of
// epoch-millisecond dates. An outFields entry the layer does not have is an error.
func layerProperties(fields []field, outFields []string, oidField string) (props []tasks.Property, dates map[string]bool, err error) {
	dates = map[string]bool{}
	for _, f := range fields {
		typ, ok := columnType(f.Type)
		if !ok || len(outFields) > 0 && !slices.Contains(outFields, f.Name) && f.Name != oidField {
			continue
		}
		if f.Type == "esriFieldTypeDate" {
			dates[f.Name] = true
		}
		props = append(props, tasks.Property{Name: f.Name, Type: typ})
	}
	for _, f := range outFields {
		if !slices.ContainsFunc(props, func(p tasks.Property) bool { return p.Name == f }) {
			return nil, nil, fmt.Errorf("out_fields: the layer has no field %q", f)
		}
	}
	return props, dates, nil
}

// layerArea decides the lon/lat area harvested: the configured bbox, else the layer's
// extent (fromExtent), which must be stated in lon/lat or web mercator.
func layerArea(bbox *[4]float64, rawExtent json.RawMessage) (area orb.Bound, fromExtent bool, err error) {
	switch {
	case bbox != nil:
		b := *bbox
		return orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}, false, nil
	case len(rawExtent) > 0 && string(rawExtent) != "null":
		b, wkid, err := layerExtent(rawExtent)
		switch {
		case err != nil:
			return orb.Bound{}, false, fmt.Errorf("no bbox given and the layer's extent cannot be read (%v): set bbox", err)
		case b == nil:
			return orb.Bound{}, false, fmt.Errorf("no bbox given and the layer states its extent in wkid %d: set bbox (lon/lat)", wkid)
		}
		return *b, true, nil
	}
	return orb.Bound{}, false, errors.New("no bbox given and the layer states no extent: set bbox")
}

// layerExtent reads a layer's extent in lon/lat, converting web mercator; nil (with the
// wkid it is stated in) when it is stated in another CRS.
func layerExtent(rawExtent json.RawMessage) (*orb.Bound, int, error) {
	var e extent
	if err := json.Unmarshal(rawExtent, &e); err != nil {
		return nil, 0, err
	}
	b := orb.Bound{Min: orb.Point{e.XMin, e.YMin}, Max: orb.Point{e.XMax, e.YMax}}
	switch wkid := max(e.SpatialReference.LatestWKID, e.SpatialReference.WKID); wkid {
	case 4326:
		return &b, wkid, nil
	case 3857, 102100, 102113, 900913:
		return &orb.Bound{Min: project.Mercator.ToWGS84(b.Min), Max: project.Mercator.ToWGS84(b.Max)}, wkid, nil
	default:
		return nil, wkid, nil
	}
}

// columnType maps an Esri field type to a column type; ok is false for what is no
// attribute (the geometry, blobs, rasters).
func columnType(esri string) (store.ColumnType, bool) {
	switch esri {
	case "esriFieldTypeOID", "esriFieldTypeInteger", "esriFieldTypeSmallInteger", "esriFieldTypeBigInteger", "esriFieldTypeLong":
		return store.TypeBigint, true
	case "esriFieldTypeDouble", "esriFieldTypeSingle":
		return store.TypeDouble, true
	case "esriFieldTypeDate", "esriFieldTypeTimestampOffset":
		return store.TypeTimestamptz, true
	case "esriFieldTypeDateOnly":
		return store.TypeDate, true
	case "esriFieldTypeGeometry", "esriFieldTypeBlob", "esriFieldTypeRaster", "esriFieldTypeXML":
		return "", false
	}
	return store.TypeText, true // String, GUID, GlobalID, TimeOnly and types to come
}
