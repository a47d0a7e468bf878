package spatial

import "testing"

func TestParseExceptionReport(t *testing.T) {
	tests := []struct {
		name, body, code string
		ok               bool
	}{
		{name: "mapserver database down (HTTP 400)", ok: true, code: "NoApplicableCode",
			body: `<?xml version="1.0" encoding="UTF-8"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="2.0.0" xml:lang="en-US" xsi:schemaLocation="http://www.opengis.net/ows/1.1 http://schemas.opengis.net/ows/1.1.0/owsExceptionReport.xsd">
  <ows:Exception exceptionCode="NoApplicableCode" locator="mapserv">
    <ows:ExceptionText>msPostGISLayerOpen(): Query error. Database connection failed.</ows:ExceptionText>
  </ows:Exception>
</ows:ExceptionReport>`},
		{name: "wfs 1.0", ok: true, code: "InvalidParameterValue",
			body: `<ServiceExceptionReport version="1.2.0"><ServiceException code="InvalidParameterValue">TYPENAME</ServiceException></ServiceExceptionReport>`},
		{name: "cut short after the code", ok: true, code: "NoApplicableCode",
			body: `<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1"><ows:Exception exceptionCode="NoApplicableCode"><ows:ExceptionText>msPostGIS`},
		{name: "html", body: `<html><body>Bad Gateway</body></html>`},
		{name: "json", body: `{"code": "x"}`},
		{name: "empty", body: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, ok := ParseExceptionReport([]byte(tt.body))
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && rep.Code != tt.code {
				t.Errorf("code = %q, want %q", rep.Code, tt.code)
			}
		})
	}
}
