package verbs_test

import (
	"testing"

	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

// TestSuiteModel runs the whole verbs suite on the model card, sizes 0 to 16 MiB.
func TestSuiteModel(t *testing.T) {
	o := verbstest.Options{}
	if testing.Short() {
		o.MaxSize, o.QPs = 1<<20, 4
	}
	verbstest.Run(t, "model", o)
}
