package flows

import (
	"fmt"
	"strings"
	"time"

	"github.com/geoflow/geoflow/tasks"
	"github.com/goccy/go-yaml/ast"
	"github.com/robfig/cron/v3"
)

// checkFlowKeys checks the flow's own keys (besides its tasks and defaults): its name,
// schedule and time zone, and its limits.
func (d *decoder) checkFlowKeys(root ast.Node, doc flowDoc) {
	if doc.Name == "" {
		d.errorf(root, "the flow has no name: add `name: my_flow` ([a-z0-9_]+)")
	} else if !flowNameRE.MatchString(doc.Name) {
		d.errorf(d.keys["name"], "name: %q must match [a-z0-9_]+ (it identifies the flow in the database)", doc.Name)
	}
	for _, p := range checkSchedule(doc.Schedule, doc.Timezone) {
		d.errorf(d.keys[p.key], "%s", p.msg)
	}
	if doc.MaxParallelTasks < 0 {
		d.errorf(d.keys["max_parallel_tasks"], "max_parallel_tasks must not be negative")
	}
	if doc.StoreWait != nil && *doc.StoreWait == 0 {
		d.errorf(d.keys["store_wait"], "store_wait: 0s must be above zero (default %s)", DefaultStoreWait)
	}
	if doc.MemoryLimit != 0 {
		if err := tasks.CheckMemoryLimit(int64(doc.MemoryLimit)); err != nil {
			d.errorf(d.keys["memory_limit"], "memory_limit: %v", err)
		}
	}
}

// keyProblem is a problem with the value of a flow's key.
type keyProblem struct{ key, msg string }

// checkSchedule returns what is wrong with a flow's schedule and timezone: a time zone
// that is not one, a zone given twice (timezone: and CRON_TZ= in the schedule), a zone
// with no schedule after it, a schedule that is not cron. The schedule is checked in the
// time zone when it is one.
func checkSchedule(schedule, timezone string) []keyProblem {
	var out []keyProblem
	tzOK := true
	if timezone != "" {
		if _, err := time.LoadLocation(timezone); err != nil {
			tzOK = false
			out = append(out, keyProblem{"timezone", fmt.Sprintf("timezone: %q is not a time zone: use an IANA name such as Europe/Berlin or UTC", timezone)})
		}
	}
	if schedule == "" {
		return out
	}
	spec := schedule
	namesZone := func(spec string) bool { return strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") }
	if timezone != "" && namesZone(spec) {
		tzOK = false
		out = append(out, keyProblem{"timezone", "timezone: the schedule names its own time zone; set it once, with timezone: or with CRON_TZ= in schedule:"})
	}
	if timezone != "" && tzOK {
		spec = "CRON_TZ=" + timezone + " " + spec
	}
	if namesZone(spec) && !strings.Contains(spec, " ") {
		// robfig/cron panics on a zone with nothing after it.
		return append(out, keyProblem{"schedule", fmt.Sprintf("schedule: %q names a time zone but no schedule", schedule)})
	}
	if _, err := cron.ParseStandard(spec); err != nil {
		out = append(out, keyProblem{"schedule", fmt.Sprintf("schedule: %q is not a cron schedule: %v", schedule, err)})
	}
	return out
}
