package sim

import (
	"fmt"
	"os"
	"testing"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// TestMain builds (with make) the co-simulation library of every shipped
// block before the tests run; make does nothing when they are up to date.
func TestMain(m *testing.M) {
	mods, err := gen.Blocks()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var libs []string
	for _, mod := range mods {
		libs = append(libs, LibPath(mod.Name, false))
	}
	if err := Build(libs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
