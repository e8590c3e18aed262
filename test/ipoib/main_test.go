package ipoib

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeBuilds()
	os.Exit(code)
}
