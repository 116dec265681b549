package replay

import (
	"os"
	"runtime/debug"
)

// BatchGCPercent is the garbage collector's target a replay run sets
// (BatchGC). Replaying allocates much per step and keeps little (the
// chains and reports in flight): with Go's default of 100 the collector
// runs every few hundred steps and took about half of the CPU of a
// two-worker run (BenchmarkReplayExact, gc=default against gc=batch).
// At 400 the live heap stays as flat in the number of sessions, about
// three times as high.
const BatchGCPercent = 400

// BatchGC sets the collector's target to BatchGCPercent for a batch run,
// unless the GOGC environment variable says otherwise, and returns a
// function that restores the previous target.
func BatchGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(BatchGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
