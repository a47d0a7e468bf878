package geojson

// The reference reader's top-level members: features, counts, links, crs,
// exception reports and a single Feature's members (see reader_ref_test.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/geoflow/geoflow/spatial"
)

// members reads top-level members until the "features" array opens (then
// inFeatures is set) or the top-level object ends.
func (r *refReader) members() error {
	for {
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonErr(err)
		}
		if d, ok := tok.(json.Delim); ok && d == '}' {
			return nil
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("geojson: unexpected %v in the top-level object", tok)
		}
		if err := r.member(key); err != nil {
			return err
		}
		if r.inFeatures {
			return nil
		}
	}
}

func (r *refReader) member(key string) error {
	switch key {
	case "features":
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonErr(err)
		}
		switch tok {
		case json.Delim('['):
			r.inFeatures, r.sawFeatures = true, true
			return nil
		case nil:
			r.sawFeatures = true
			return nil
		}
		if d, ok := tok.(json.Delim); ok {
			// An object: not a collection; consume it to stay in step.
			if err := r.skipRest(d); err != nil {
				return err
			}
		}
		return r.notFeatures()
	case "numberMatched", "numberReturned", "totalFeatures":
		var v any
		if err := r.dec.Decode(&v); err != nil {
			return r.decodeErr(err)
		}
		n := refCount(v)
		switch key {
		case "numberMatched":
			r.meta.NumberMatched = n
		case "numberReturned":
			r.meta.NumberReturned = n
		default:
			r.total = n
		}
	case "links":
		var links []struct {
			Href string `json:"href"`
			Rel  string `json:"rel"`
		}
		if err := r.dec.Decode(&links); err != nil {
			return r.decodeErr(err)
		}
		for _, l := range links {
			if l.Rel == "next" && r.meta.Next == "" {
				r.meta.Next = l.Href
			}
		}
	case "crs":
		var crs struct {
			Properties struct {
				Name string `json:"name"`
			} `json:"properties"`
		}
		if err := r.dec.Decode(&crs); err != nil {
			return r.decodeErr(err)
		}
		r.meta.SRSName = crs.Properties.Name
	case "type":
		var s any
		if err := r.dec.Decode(&s); err != nil {
			return r.decodeErr(err)
		}
		r.typ, _ = s.(string)
	case "exceptions":
		var exs []struct {
			Code    string `json:"code"`
			Locator string `json:"locator"`
			Text    string `json:"text"`
		}
		if err := r.dec.Decode(&exs); err != nil {
			return r.decodeErr(err)
		}
		rep := &spatial.ExceptionReport{}
		var texts []string
		for i, e := range exs {
			if i == 0 {
				rep.Code, rep.Locator = e.Code, e.Locator
			}
			if t := strings.TrimSpace(e.Text); t != "" {
				texts = append(texts, t)
			}
		}
		rep.Text = strings.Join(texts, "; ")
		r.exc = rep
	case "error":
		var v any
		if err := r.dec.Decode(&v); err != nil {
			return r.decodeErr(err)
		}
		r.errorMember(v)
	case "code", "description":
		var v any
		if err := r.dec.Decode(&v); err != nil {
			return r.decodeErr(err)
		}
		if key == "code" {
			r.code = refScalarText(v)
		} else {
			r.descr = refScalarText(v)
		}
	case "id", "geometry", "properties":
		// Members of a top-level Feature (GetFeatureById); decoded into
		// the same shape a collection member has.
		var err error
		switch key {
		case "id":
			err = r.dec.Decode(&r.single.ID)
		case "geometry":
			err = r.dec.Decode(&r.single.Geometry)
		default:
			err = r.dec.Decode(&r.single.Properties)
		}
		if err != nil {
			return r.decodeErr(err)
		}
		r.singleN++
	default:
		var skip json.RawMessage
		if err := r.dec.Decode(&skip); err != nil {
			return r.decodeErr(err)
		}
	}
	return nil
}

// decodeErr classifies an error from Decode of a top-level member: a type
// mismatch means the body is not the collection it claims to be.
func (r *refReader) decodeErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return r.notFeatures()
	}
	return r.jsonErr(err)
}

// skipRest consumes tokens to the end of the container opened by d.
func (r *refReader) skipRest(d json.Delim) error {
	depth := 1
	for depth > 0 {
		tok, err := r.dec.Token()
		if err != nil {
			return r.jsonErr(err)
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

func (r *refReader) errorMember(v any) {
	rep := &spatial.ExceptionReport{}
	switch e := v.(type) {
	case map[string]any:
		rep.Code = refScalarText(e["code"])
		rep.Text = refScalarText(e["message"])
		if d, ok := e["details"].([]any); ok {
			for _, x := range d {
				if s := strings.TrimSpace(refScalarText(x)); s != "" {
					rep.Text = strings.TrimPrefix(rep.Text+"; "+s, "; ")
				}
			}
		}
	default:
		rep.Text = refScalarText(v)
	}
	r.exc = rep
}

func refScalarText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// count reads a count member: a non-negative number, else -1 ("unknown").
func refCount(v any) int64 {
	f, ok := v.(float64)
	if !ok || f < 0 || f > 1<<53 {
		return -1
	}
	return int64(f)
}
