package interop

import (
	"fmt"
	"os"
	"testing"
)

// TestMain writes the matrix once every test has run, so that the scenarios
// of TestInterop and TestInteropCardInSlot are in it.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := writeMatrix(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	RemoveBuiltTools()
	os.Exit(code)
}
