//go:build race

package verbs_test

// raceEnabled: under the race detector the load tests run at a smaller
// scale (it allows at most 8128 live goroutines, and 1,000 QP pairs take
// 8,000); make test-load runs them at full scale without it.
const raceEnabled = true
