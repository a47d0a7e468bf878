package wfs

import (
	"context"
	"io"
	"net/http"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/spatial/gml"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/harvest"
)

var _ harvest.Protocol = (*protocol)(nil)

// protocol is WFS GetFeature for the harvest engine, as negotiated in p.
type protocol struct {
	t *Task
	p *prepared
}

// Count implements harvest.Protocol with RESULTTYPE=hits.
func (w *protocol) Count(ctx context.Context, env *tasks.Env, unit string, box orb.Bound) (int64, error) {
	return w.t.hits(ctx, env, w.p, unit, box)
}

// Request implements harvest.Protocol: a GetFeature of the box, sorted by the task's
// sort property where the server sorts and q asks for it.
func (w *protocol) Request(env *tasks.Env, unit string, q harvest.Query) retry.Request {
	return w.t.request(env, w.p, unit, w.t.getFeature(w.p, q.Box, q.Start, q.Count, false, q.Sorted))
}

// CheckResponse implements harvest.Protocol.
func (w *protocol) CheckResponse(resp *http.Response) error { return tasks.RefuseHTML(resp) }

// Decode implements harvest.Protocol: GeoJSON or GML, as negotiated.
func (w *protocol) Decode(env *tasks.Env, body io.Reader) harvest.Decoder {
	if w.p.geoJSON {
		return geojson.NewReader(body, geojson.Options{Limits: w.t.cfg.Limits.Spatial()})
	}
	return gml.NewReader(body, gml.Options{WFSVersion: w.p.version, DefaultSRS: w.p.srsParam, TypeName: w.p.typeName, Limits: w.t.cfg.Limits.Spatial()})
}

// Classify implements harvest.Protocol.
func (w *protocol) Classify(err error) error { return classify(err) }
