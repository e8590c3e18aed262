package interop

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBuiltTools()
	os.Exit(code)
}
