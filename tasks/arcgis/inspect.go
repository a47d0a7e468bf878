package arcgis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/spatial/esrijson"
	"github.com/geoflow/geoflow/tasks"
)

var _ tasks.Online = (*Config)(nil)

// serviceDoc is a FeatureServer's or MapServer's document (?f=json).
type serviceDoc struct {
	CurrentVersion     float64 `json:"currentVersion"`
	ServiceDescription string  `json:"serviceDescription"`
	Description        string  `json:"description"`
	DocumentInfo       struct {
		Title string `json:"Title"`
	} `json:"documentInfo"`
	MapName string `json:"mapName"`
	Layers  []struct {
		ID           int    `json:"id"`
		Name         string `json:"name"`
		GeometryType string `json:"geometryType"`
	} `json:"layers"`
	MaxRecordCount int `json:"maxRecordCount"`
}

// title is the service's title, from whichever member the server fills.
func (d *serviceDoc) title() string {
	for _, s := range []string{d.DocumentInfo.Title, d.MapName, d.ServiceDescription, d.Description} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// splitService splits a URL a user pasted into the service's URL (.../FeatureServer or
// .../MapServer, without query) and the layer id it names, "" for none; ok is false when
// the path names no ArcGIS service.
func splitService(raw string) (svc, layerID string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", false
	}
	u.RawQuery, u.Fragment = "", ""
	path := strings.TrimSuffix(u.Path, "/")
	path = strings.TrimSuffix(path, "/query")
	if layerPath(path) {
		i := strings.LastIndexByte(path, '/')
		path, layerID = path[:i], path[i+1:]
	}
	if !strings.HasSuffix(path, "/FeatureServer") && !strings.HasSuffix(path, "/MapServer") {
		return "", "", false
	}
	u.Path = path
	return u.String(), layerID, true
}

// Inspect describes the ArcGIS REST feature or map service at rawURL (geoflow inspect):
// the service document for its layers, and for each layer described whole
// (tasks.Describe; a URL naming a layer describes that one) the layer document (fields,
// extent, maxRecordCount, what its queries can do) and a returnCountOnly count.
func Inspect(ctx context.Context, env *tasks.Env, rawURL string) (*tasks.Service, error) {
	svcURL, only, ok := splitService(rawURL)
	if !ok {
		return nil, fmt.Errorf("%w: %s names no .../FeatureServer or .../MapServer", tasks.ErrNotThisKind, redact.URL(rawURL))
	}
	if only != "" && tasks.InspectLayer(ctx) == "" {
		ctx = tasks.WithInspectLayer(ctx, only)
	}
	t := &Task{cfg: *NewConfig()}
	t.cfg.URL = svcURL
	var doc serviceDoc
	if err := t.readDoc(ctx, env, "service", svcURL, &doc); err != nil {
		err = fmt.Errorf("reading the service %s: %w", redact.URL(svcURL), err)
		var se *esrijson.ServiceError
		if errors.As(err, &se) {
			return nil, err // an ArcGIS server's own error: it speaks the protocol
		}
		return nil, tasks.ProbeError(err)
	}
	kind := svcURL[strings.LastIndexByte(svcURL, '/')+1:]
	s := &tasks.Service{Kind: "arcgis_features", Protocol: "ArcGIS " + kind, URL: redact.URL(svcURL), Title: doc.title(),
		MaxPage: doc.MaxRecordCount, Filters: []string{"envelope", "SQL where"}, CRSs: nil}
	if doc.CurrentVersion > 0 {
		s.Protocol += " " + strconv.FormatFloat(doc.CurrentVersion, 'f', -1, 64)
	}
	for _, dl := range doc.Layers {
		id := strconv.Itoa(dl.ID)
		l := tasks.Layer{Name: id, Title: dl.Name, Geometry: strings.TrimPrefix(dl.GeometryType, "esriGeometry"), Count: -1}
		if tasks.Describe(ctx, id, len(doc.Layers)) {
			s.Notes = append(s.Notes, describeLayer(ctx, env, svcURL+"/"+id, &l, s)...)
		}
		s.Layers = append(s.Layers, l)
	}
	if len(doc.Layers) > tasks.MaxDescribed && tasks.InspectLayer(ctx) == "" {
		s.Notes = append(s.Notes, tasks.NotDescribedNote(len(doc.Layers)))
	} else if len(doc.Layers) > 0 && s.Layers[0].Extent == nil && len(s.Layers[0].Fields) == 0 {
		s.Notes = append(s.Notes, "layer extents are in each layer's document: name one with --layer N")
	}
	return s, nil
}

// describeLayer fills l from the layer document at layerURL and a returnCountOnly query,
// and s's paging, page size and sorting from what the layer says of its queries.
func describeLayer(ctx context.Context, env *tasks.Env, layerURL string, l *tasks.Layer, s *tasks.Service) []string {
	t := &Task{cfg: *NewConfig()}
	t.cfg.URL = layerURL
	doc, err := t.readLayer(ctx, env)
	if err != nil {
		return []string{fmt.Sprintf("layer %s: %v", l.Name, err)}
	}
	var notes []string
	l.Title = cmpOr(l.Title, doc.Name)
	l.Geometry = strings.TrimPrefix(doc.GeometryType, "esriGeometry")
	for _, f := range doc.Fields {
		if f.Type != "esriFieldTypeGeometry" {
			l.Fields = append(l.Fields, tasks.Field{Name: f.Name, Type: strings.TrimPrefix(f.Type, "esriFieldType")})
		}
	}
	if len(doc.Extent) > 0 && string(doc.Extent) != "null" {
		b, wkid, err := layerExtent(doc.Extent)
		switch {
		case err != nil:
			notes = append(notes, fmt.Sprintf("layer %s: its extent cannot be read: %v", l.Name, err))
		case b == nil:
			notes = append(notes, fmt.Sprintf("layer %s states its extent in wkid %d, not lon/lat or web mercator", l.Name, wkid))
		default:
			l.Extent = b
		}
		if wkid > 0 {
			l.CRSs = []string{fmt.Sprintf("EPSG:%d", wkid)}
		}
	}
	if doc.MaxRecordCount > 0 && (s.MaxPage == 0 || doc.MaxRecordCount < s.MaxPage) {
		s.MaxPage = doc.MaxRecordCount
	}
	if doc.SupportsPagination || doc.AdvancedQueryCapabilities.SupportsPagination {
		s.Paging = "resultOffset and resultRecordCount (geoflow fetches by object id)"
	} else if s.Paging == "" {
		s.Paging = "none (geoflow fetches by object id)"
	}
	s.Sorting = s.Sorting || doc.SupportsAdvancedQueries || doc.AdvancedQueryCapabilities.SupportsOrderBy
	var count struct {
		Count *int64 `json:"count"`
	}
	if err := t.query(ctx, env, "count", url.Values{"where": {"1=1"}, "returnCountOnly": {"true"}, "f": {"json"}}, &count); err != nil {
		notes = append(notes, fmt.Sprintf("layer %s: no count: %v", l.Name, err))
	} else if count.Count != nil {
		l.Count = *count.Count
	}
	return notes
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Snippet is an arcgis_features task harvesting layer (its id) of s, as flow YAML
// (geoflow inspect --flow).
func Snippet(s *tasks.Service, layer string) (string, error) {
	l, err := s.FindLayer(layer)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type: arcgis_features\nurl: %s/%s\n", strings.TrimSuffix(s.URL, "/"), l.Name)
	if l.Extent != nil {
		fmt.Fprintf(&b, "# the layer's extent, lon/lat: narrow it to harvest less\nbbox: %s\n", tasks.SnippetBBox(*l.Extent))
	}
	fmt.Fprintf(&b, "target:\n  table: %s\n", tasks.SnippetName(cmpOr(l.Title, "layer_"+l.Name)))
	return b.String(), nil
}

// CheckOnline implements tasks.Online: the task's layer, out_fields, the columns its
// transform names and its bbox, against the layer document. No feature is fetched.
func (c *Config) CheckOnline(ctx context.Context, env *tasks.Env, p tasks.Problems) error {
	t, err := newTask("online", *c)
	if err != nil {
		return err
	}
	l, err := t.readLayer(ctx, env)
	if err != nil {
		t.reportLayer(ctx, env, err, p)
		return nil
	}
	if err := checkLayer(l, c.URL); err != nil {
		p.At("url", "%v", err)
		return nil
	}
	names := make([]string, len(l.Fields))
	for i, f := range l.Fields {
		names[i] = f.Name
	}
	for _, f := range c.OutFields {
		if !slices.Contains(names, f) {
			p.At("out_fields", "the layer has no field %q%s", f, didYouMean(f, names))
		}
	}
	if props, _, err := layerProperties(l.Fields, nil, l.ObjectIDField); err == nil {
		if _, _, err := c.Transform.Plan(c.URL, props); err != nil {
			p.At("transform", "%v", err)
		}
	}
	if err := checkExtent(c.BBox, l.Extent, l.Name); err != nil {
		p.At("bbox", "%v", err)
	}
	return nil
}

// checkExtent decides whether a configured bbox may hold any of the layer's features,
// from its extent: an *tasks.ExtentError when it cannot. Without a bbox, or an extent
// in lon/lat or web mercator, there is nothing to check.
func checkExtent(bbox *[4]float64, rawExtent json.RawMessage, name string) error {
	if bbox == nil || len(rawExtent) == 0 || string(rawExtent) == "null" {
		return nil
	}
	ext, _, err := layerExtent(rawExtent)
	if err != nil || ext == nil {
		return nil
	}
	b := *bbox
	return tasks.CheckExtent(name, orb.Bound{Min: orb.Point{b[0], b[1]}, Max: orb.Point{b[2], b[3]}}, *ext)
}

// reportLayer reports a layer the service does not have at url, naming the service's
// layers and the nearest one; any other failure at url as it is.
func (t *Task) reportLayer(ctx context.Context, env *tasks.Env, err error, p tasks.Problems) {
	svcURL, id, ok := splitService(t.cfg.URL)
	var doc serviceDoc
	if !ok || id == "" || t.readDoc(ctx, env, "service", svcURL, &doc) != nil || len(doc.Layers) == 0 {
		p.At("url", "%v", err)
		return
	}
	var names []string
	for _, l := range doc.Layers {
		if strconv.Itoa(l.ID) == id {
			p.At("url", "%v", err)
			return
		}
		names = append(names, fmt.Sprintf("%d (%s)", l.ID, l.Name))
	}
	p.At("url", "the service has no layer %s (it has %s)", id, strings.Join(names, ", "))
}

func didYouMean(s string, names []string) string {
	if n := didyoumean.Nearest(s, names); n != "" {
		return fmt.Sprintf("; did you mean %q?", n)
	}
	return ""
}
