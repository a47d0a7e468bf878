package wfs

// SetSplitBudget makes the split budget n for a test and returns the restore.
func SetSplitBudget(n int64) func() {
	old := splitBudget
	splitBudget = func(int64, int64) int64 { return n }
	return func() { splitBudget = old }
}
