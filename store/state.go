package store

// State is where a run, a task or a unit stands, as recorded. The values are stored, so
// they never change.
type State string

// The states. A run is running, then done, incomplete, failed or interrupted; a task and a unit also
// start pending, and a task whose upstream task did not succeed is upstream_failed. A
// unit is failed when it has a dead letter (or could not get one recorded).
const (
	Pending        State = "pending"
	Running        State = "running"
	Done           State = "done"
	Failed         State = "failed"
	UpstreamFailed State = "upstream_failed"
	Interrupted    State = "interrupted"
	// Incomplete is a task (and a run) whose harvest cannot be proved complete: the
	// server counted or listed features that were neither stored nor shown to be gone.
	// What came is stored; the short tiles are dead letters of class incomplete.
	Incomplete State = "incomplete"
	// Crashed is how a run recorded as running reads when no process holds it: the
	// process running it died without finishing (SIGKILL, a crash, a reboot). It is
	// never stored; --resume continues such a run.
	Crashed State = "crashed"
)

// Triggers: why a run started.
const (
	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
	TriggerReplay   = "replay"
	// TriggerUI is a run started from the web UI or its API (geoflow serve, geoflow ui).
	TriggerUI = "ui"
)
