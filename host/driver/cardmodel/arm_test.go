package cardmodel_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// TestCQArm covers the CQ doorbell's arming: an arm waits for the next
// completion (solicited-only: the next solicited or error one) unless one
// already lies past the doorbell's CI, in which case CQ_NOTIFY is written
// at once. That closes the lost wakeup of a driver that polled before a
// CQE the card had already issued reached memory.
func TestCQArm(t *testing.T) {
	plain := cardmodel.Completion{QPN: 4, Op: cs.WCOpcodeSend}
	sol := cardmodel.Completion{QPN: 4, Op: cs.WCOpcodeRecv, Solicited: true}
	bad := cardmodel.Completion{QPN: 4, Op: cs.WCOpcodeSend, Status: cs.WCStatusLocProtErr}
	const arm, armSol = 1 << cs.CQDBCIArmShift, 1<<cs.CQDBCIArmShift | 1<<cs.CQDBCIArmSolicitedShift
	type step struct {
		cpl *cardmodel.Completion // a completion, or else
		db  uint32                // a doorbell: CI | arming bits
	}
	ci := func(n uint32, bits uint32) step { return step{db: n | bits} }
	cpl := func(c cardmodel.Completion) step { return step{cpl: &c} }
	for _, tc := range []struct {
		name    string
		steps   []step
		notices []int // the steps after which a CQ_NOTIFY was written
	}{
		{"arm on an empty CQ waits for the next", []step{ci(0, arm), cpl(plain), cpl(plain)}, []int{1}},
		{"arm behind PI notifies at once", []step{cpl(plain), ci(0, arm), cpl(plain)}, []int{1}},
		{"arm at PI waits", []step{cpl(plain), ci(1, arm), cpl(plain)}, []int{2}},
		{"a doorbell without ARM never notifies", []step{cpl(plain), ci(0, 0), cpl(plain)}, nil},
		{"solicited arm ignores plain ones past CI", []step{cpl(plain), ci(0, armSol), cpl(plain), cpl(sol)}, []int{3}},
		{"solicited arm behind a solicited one", []step{cpl(sol), cpl(plain), ci(0, armSol)}, []int{2}},
		{"solicited arm behind an error one", []step{cpl(bad), ci(0, armSol)}, []int{1}},
		{"solicited one consumed", []step{cpl(sol), cpl(plain), ci(1, 0), ci(1, armSol), cpl(plain)}, nil},
		{"solicited one consumed, then a new one", []step{cpl(sol), ci(1, armSol), cpl(plain), cpl(sol)}, []int{3}},
		{"notified arm is spent", []step{cpl(plain), ci(0, arm), cpl(plain), ci(0, 0), cpl(plain)}, []int{1}},
		{"re-arm while consumed entries remain", []step{cpl(plain), ci(0, arm), ci(0, arm)}, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notices []int
			at := 0
			q := cardmodel.NewQueues(func(w cardmodel.DMAWrite) error {
				if w.Kind == cardmodel.WriteEQE {
					e := cs.EQE(w.Data)
					require.Equal(t, cs.EQETypeCQNotify, e.Type(), "step %d", at)
					notices = append(notices, at)
				}
				return nil
			})
			require.NoError(t, q.EQConfig(0x10000, 6|1<<cs.EQCfgEnableShift))
			require.NoError(t, q.CQCommand(3, 0x20000, 4, cs.CQOpCreate))
			for i, s := range tc.steps {
				at = i
				if s.cpl != nil {
					r, _ := q.Complete(3, *s.cpl)
					require.Equal(t, cardmodel.CQWritten, r, "step %d", i)
				} else {
					q.CQDoorbell(3, s.db)
				}
			}
			require.Equal(t, tc.notices, notices, fmt.Sprintf("steps %+v", tc.steps))
		})
	}
}
