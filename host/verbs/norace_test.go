//go:build !race

package verbs_test

const raceEnabled = false
