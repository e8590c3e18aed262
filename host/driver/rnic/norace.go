//go:build !race

package rnic

// raceBuild is set when the race detector is on (see txLoop).
const raceBuild = false
