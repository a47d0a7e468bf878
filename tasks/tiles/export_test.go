package tiles

// SetMaxBlockData sets how much tile content a block may hold, until the test ends.
func SetMaxBlockData(cleanup func(func()), n int) {
	old := maxBlockData
	maxBlockData = n
	cleanup(func() { maxBlockData = old })
}
