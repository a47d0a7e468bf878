package ogcapi

// pushdown is transform.where for the server to evaluate too, where it declares the
// Features Part 3 filter and CQL2 text conformance classes: it then counts and returns
// only the features the filter keeps, and the harvest asks for fewer pages. geoflow
// evaluates the filter on every feature all the same, so what is stored does not depend
// on how the server reads it. "" where it is not sent.
func (t *Task) pushdown(p *prepared) string {
	if p.transform == nil || p.transform.Pushdown == "" || !t.conforms(p, confFilter) || !t.conforms(p, confCQL2Text) {
		return ""
	}
	return p.transform.Pushdown
}

// filter is the CQL2 text filter of an items request: the task's filter, transform.where
// where pushed down, or both.
func filter(own, pushed string) string {
	switch {
	case own == "":
		return pushed
	case pushed == "":
		return own
	}
	return "(" + own + ") AND " + pushed
}
