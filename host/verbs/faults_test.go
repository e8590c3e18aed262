package verbs_test

import (
	"testing"

	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

// Fault injection on the model card: every fault of internal/faultproxy
// with four seeds each, traffic both ways, outcomes checked against the
// RFCs (verbstest.RunFaults).
func TestFaults(t *testing.T) {
	verbstest.RunFaults(t, "model", verbstest.FaultOptions{})
}
