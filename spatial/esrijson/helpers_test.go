package esrijson_test

import (
	"fmt"
	"strconv"
)

func itoa(i int) string          { return strconv.Itoa(i) }
func strconvF(x float64) string  { return strconv.FormatFloat(x, 'f', -1, 64) }
func describeValue(v any) string { return fmt.Sprint(v) }
