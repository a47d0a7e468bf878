package spatial

import (
	"encoding/xml"
	"io"
	"strings"

	"github.com/geoflow/geoflow/spatial/internal/sniff"
)

// IsExceptionReportElement tells whether an XML root element with this local
// name is an OGC exception report: ows:ExceptionReport (WFS 1.1/2.0) or
// ServiceExceptionReport (WFS 1.0).
func IsExceptionReportElement(local string) bool {
	return local == "ExceptionReport" || local == "ServiceExceptionReport"
}

// DecodeExceptionReport reads the rest of an exception report whose start
// element was just read from d, using d.RawToken only (so it can share a
// decoder that is read with RawToken), and matching elements by local name
// whatever their namespace. Both ows:Exception/@exceptionCode with
// ows:ExceptionText and ServiceException/@code with text content are
// understood. When d fails, the report read so far is returned with the
// error; a cut-off body gives a *TruncatedError.
func DecodeExceptionReport(d *xml.Decoder, start xml.StartElement) (*ExceptionReport, error) {
	rep := &ExceptionReport{Version: attr(start.Attr, "version")}
	var texts []string
	var text strings.Builder
	inText := false // inside ExceptionText or ServiceException
	first := true
	depth := 1
	for depth > 0 {
		tok, err := d.RawToken()
		if err != nil {
			if err == io.EOF || sniff.XMLTruncated(err) {
				err = &TruncatedError{Offset: d.InputOffset(), Err: err}
			}
			rep.Text = strings.Join(texts, "; ")
			return rep, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "Exception", "ServiceException":
				if first {
					rep.Code = attr(t.Attr, "exceptionCode")
					if rep.Code == "" {
						rep.Code = attr(t.Attr, "code")
					}
					rep.Locator = attr(t.Attr, "locator")
					first = false
				}
				if t.Name.Local == "ServiceException" {
					inText = true
					text.Reset()
				}
			case "ExceptionText":
				inText = true
				text.Reset()
			}
		case xml.EndElement:
			depth--
			switch t.Name.Local {
			case "ExceptionText", "ServiceException":
				if s := strings.TrimSpace(text.String()); s != "" {
					texts = append(texts, s)
				}
				inText = false
			}
		case xml.CharData:
			if inText {
				text.Write(t)
			}
		}
	}
	rep.Text = strings.Join(texts, "; ")
	return rep, nil
}

// attr returns the value of the attribute with this local name, in any
// namespace, or "".
func attr(attrs []xml.Attr, local string) string {
	for _, a := range attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// ParseExceptionReport reads an OGC exception report from the start of body (an error
// response's first bytes, which may be cut short): ok is false when body does not start
// with one. A report cut off after its first exception still gives its code and text.
func ParseExceptionReport(body []byte) (rep *ExceptionReport, ok bool) {
	d := xml.NewDecoder(strings.NewReader(string(body)))
	d.Strict = false
	for {
		tok, err := d.RawToken()
		if err != nil {
			return nil, false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !IsExceptionReportElement(t.Name.Local) {
				return nil, false
			}
			rep, _ = DecodeExceptionReport(d, t)
			return rep, rep != nil && (rep.Code != "" || rep.Text != "")
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				return nil, false
			}
		}
	}
}
