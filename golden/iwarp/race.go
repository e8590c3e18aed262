//go:build race

package iwarp

// raceBuild is set when the race detector is on (see writeOut).
const raceBuild = true
