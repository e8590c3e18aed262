//go:build cosim

package simcard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/simcard"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

// TestRTLLostCQE: a CQ page the IOMMU refuses puts the CQ in error on
// the all-RTL card as on the card model, through the real driver: the
// user gets the completions before the lost slot, then a *rnic.CQError
// naming the CQE's write (card_cq's CQ_ERROR), never a hang; the QPs on
// the CQ end with their Terminate. The RTL hears of the fault a write
// response after it issued the CQE, with up to 16 WQEs in flight, so it
// may have sent and completed more of them by then: the checker takes
// that as loose and finds nothing else wrong.
func TestRTLLostCQE(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			before := simcard.ProcessTotals()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			a, b := verbstest.Pair(t, ctx, fmt.Sprintf("sim:%d", w), 4096)
			phys := a.Ctx.Card().(*simcard.Card).Phys
			verbstest.LostCQE(t, ctx, a, b, phys)
			t.Logf("the checker took %d RTL writes as loose (timing-decided: status records between the model's, notifications, work finished before the RTL heard of the fault)", phys.Counts().Loose)
			d := logTotals(t, before)
			require.Zero(t, d.Mismatches, "the checker disagreed with the RTL")
		})
	}
}
