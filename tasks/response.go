package tasks

import (
	"io"
	"net/http"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
)

// RefuseHTML is the check every feature source makes before decoding an answer: an HTML
// page answered in place of data (a proxy's error page, or a server that ignored the
// format asked for) is a transient parse failure, since the server behind may recover,
// quoting the start of the page. Other answers pass.
func RefuseHTML(resp *http.Response) error {
	if strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/html") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return retry.Transient(dlq.ClassParse, &spatial.NotFeaturesError{Kind: "html", Snippet: spatial.Snippet(b, 200)})
	}
	return nil
}
