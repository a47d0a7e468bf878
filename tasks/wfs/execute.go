package wfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/spatial"
	"github.com/geoflow/geoflow/store"
)

// classify marks a decode error of a response's head for the retry handler.
func classify(err error) error {
	var ex *spatial.ExceptionReport
	var nf *spatial.NotFeaturesError
	var pe *store.PropertyError
	switch {
	case errors.Is(err, spatial.ErrTooLarge):
		return retry.Permanent(dlq.ClassTooLarge, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return retry.Transient(dlq.ClassTruncated, err)
	case errors.As(err, &ex):
		if transientException(ex) {
			return retry.Transient(dlq.ClassExceptionReport, err)
		}
		return retry.Permanent(dlq.ClassExceptionReport, err)
	case errors.As(err, &nf):
		if nf.Kind == "html" {
			// A proxy's error page answered with 200: the server behind it may recover.
			return retry.Transient(dlq.ClassParse, fmt.Errorf("the server answered an HTML page instead of features: %w", err))
		}
		return retry.Permanent(dlq.ClassParse, err)
	case errors.As(err, &pe):
		return retry.Permanent(dlq.ClassParse, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return retry.Permanent(dlq.ClassParse, err)
}

// classifyException is the retry handler's Classify hook for answers with an error
// status: an OGC exception report in the body decides whether asking again can help. A
// 5xx is retried anyway (and keeps its class, http_5xx) unless the report says the
// request itself is wrong; a 4xx is retried only when the report says the server failed.
func classifyException(status int, body []byte) error {
	ex, ok := spatial.ParseExceptionReport(body)
	if !ok {
		return nil
	}
	err := fmt.Errorf("HTTP %d: %w", status, ex)
	switch transient := transientException(ex); {
	case transient && status >= 500:
		return nil
	case transient:
		return retry.Transient(dlq.ClassExceptionReport, err)
	}
	return retry.Permanent(dlq.ClassExceptionReport, err)
}

// transientException tells a server's own failures from requests that can never succeed.
// The client's mistakes have codes of their own; NoApplicableCode is the catch-all that
// servers use for everything else, including their backend failing: MapServer answers
// "msPostGISLayerOpen(): Query error. Database connection failed" with it while its
// database restarts, and is back seconds later. So an exception report is retried unless
// its code says the request itself is wrong.
func transientException(ex *spatial.ExceptionReport) bool {
	switch ex.Code {
	case "InvalidParameterValue", "MissingParameterValue", "OperationNotSupported", "OptionNotSupported",
		"VersionNegotiationFailed", "InvalidUpdateSequence", "OperationParsingFailed", "InvalidFormat", "NotFound":
		return false
	case "NoApplicableCode", "OperationProcessingFailed":
		return true
	}
	low := strings.ToLower(ex.Text)
	return strings.Contains(low, "timeout") || strings.Contains(low, "timed out") ||
		strings.Contains(low, "too many") || strings.Contains(low, "temporar") || strings.Contains(low, "unavailable") ||
		strings.Contains(low, "connection")
}
