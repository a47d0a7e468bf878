package engine

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/geoflow/geoflow/flows"

	"github.com/geoflow/geoflow/store"
)

// flowToResume decides which flow a resumed run executes: the one it recorded when it
// started, unless useCurrent. When the file on disk differs, the differences are logged
// and put in res, so nobody resumes an edited flow without a word.
func flowToResume(f *flows.Flow, run *store.Run, useCurrent bool, log *slog.Logger, res *Result) (*flows.Flow, error) {
	if run.FlowText == "" {
		log.Warn("this run recorded no flow (it started before runs kept theirs); resuming with the file", "run", run.ID, "file", f.File)
		return f, nil
	}
	if run.FlowHash == f.Hash() {
		return f, nil
	}
	res.FlowChanges = diffLines(run.FlowText, string(f.Source), 20)
	if useCurrent {
		res.FlowUsed = "current"
		log.Warn("the flow file differs from the flow this run recorded; resuming with the file, as asked (--use-current-flow)",
			"run", run.ID, "file", f.File, "changes", strings.Join(res.FlowChanges, "; "))
		return f, nil
	}
	rec, err := f.Reparse([]byte(run.FlowText))
	if err != nil {
		return nil, fmt.Errorf("resuming run %d: the flow it recorded no longer validates (pass --use-current-flow to resume with the file): %w", run.ID, err)
	}
	if rec.Name != f.Name {
		return nil, fmt.Errorf("resuming run %d: it recorded flow %q, not %q", run.ID, rec.Name, f.Name)
	}
	res.FlowUsed = "recorded"
	log.Warn("the flow file has changed since this run started; resuming with the flow the run recorded (pass --use-current-flow to use the file)",
		"run", run.ID, "file", f.File, "changes", strings.Join(res.FlowChanges, "; "))
	return rec, nil
}

// diffLines lists, at most max of them, the lines that differ between a and b, as
// "line N: -old +new": a line-by-line comparison after the common head and tail, which
// is what a person needs to see which settings moved.
func diffLines(a, b string, max int) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	head := 0
	for head < len(al) && head < len(bl) && al[head] == bl[head] {
		head++
	}
	tail := 0
	for tail < len(al)-head && tail < len(bl)-head && al[len(al)-1-tail] == bl[len(bl)-1-tail] {
		tail++
	}
	am, bm := al[head:len(al)-tail], bl[head:len(bl)-tail]
	var out []string
	for i := 0; i < len(am) || i < len(bm); i++ {
		if len(out) == max {
			out = append(out, "...")
			break
		}
		switch {
		case i < len(am) && i < len(bm):
			out = append(out, fmt.Sprintf("line %d: -%s +%s", head+i+1, strings.TrimSpace(am[i]), strings.TrimSpace(bm[i])))
		case i < len(am):
			out = append(out, fmt.Sprintf("line %d: -%s", head+i+1, strings.TrimSpace(am[i])))
		default:
			out = append(out, fmt.Sprintf("line %d: +%s", head+i+1, strings.TrimSpace(bm[i])))
		}
	}
	return out
}
