package ipoib

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(relayEnv); spec != "" {
		os.Exit(runRelay(spec)) // this process is a floor relay (floor.go)
	}
	code := m.Run()
	removeBuilds()
	os.Exit(code)
}
