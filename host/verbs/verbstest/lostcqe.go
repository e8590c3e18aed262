package verbstest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// FaultHost is what LostCQE needs of a card's backend: its BAR0 and an
// IOMMU that can refuse part of a live mapping (simhost.Space.Refuse,
// promoted by the model and sim cards' Phys).
type FaultHost interface {
	Regs() driver.Regs
	Refuse(iova uint64, n int)
}

// LostCQE runs a card whose host refuses a CQ's second page: a (a fresh
// Pair on h's card) posts signaled 64-byte RDMA Writes, 16 at a time,
// and waits for their completions, after h's IOMMU was made to refuse
// the page of a's CQ holding its entries 128 to 255 (a's CQ, of 1,024
// entries, the last CQ created on its card: CQ_BASE still holds its
// base). The card cannot write the 129th CQE: a's CQ gives the 128
// before it, then fails for good with a *rnic.CQError naming that CQE's
// write, Wait and Poll alike, instead of waiting at a slot that never
// fills; a's QP ends with rnic.ErrDMAFault, and b's, hit by its
// Terminate.
func LostCQE(t testing.TB, ctx context.Context, a, b *End, h FaultHost) {
	t.Helper()
	const page = 4096
	lo, err := h.Regs().Read32(cardspec.CQBaseLo)
	require.NoError(t, err)
	hi, err := h.Regs().Read32(cardspec.CQBaseHi)
	require.NoError(t, err)
	cqBase := uint64(hi)<<32 | uint64(lo)
	h.Refuse(cqBase+page, page)
	perPage := page / 32 // CQEs
	var werr error
	done := 0
	for id := uint64(0); werr == nil && id < uint64(4*perPage); {
		posted := 0
		for k := 0; k < 16; k++ {
			err := a.QP.PostSend(verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(0, 64)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()})
			if err != nil {
				break // the QP is in error: its CQ's fault reached it first
			}
			id++
			posted++
		}
		for ; posted > 0; posted-- {
			wc, err := a.CQ.Wait(ctx)
			if err != nil {
				werr = err
				break
			}
			require.Equal(t, verbs.WCSuccess.String(), wc.Status.String(), "WR %d", wc.ID)
			require.Equal(t, uint64(done), wc.ID, "completions in posting order")
			done++
		}
	}
	require.Error(t, werr, "a's CQ never failed")
	require.NoError(t, ctx.Err(), "the CQ's wait ended by the test's deadline, not by the card")
	require.Equal(t, perPage, done, "the completions before the refused page, and no more")
	var ce *rnic.CQError
	require.ErrorAs(t, werr, &ce)
	require.ErrorIs(t, werr, rnic.ErrDMAFault)
	require.Equal(t, cqBase+page, ce.Fault.Addr, "the first CQE of the refused page")
	require.True(t, ce.Fault.Write)
	require.Equal(t, a.QP.Num(), ce.Fault.QPN)
	_, err = a.CQ.Wait(ctx)
	require.ErrorIs(t, err, root(werr), "Wait again: the CQ stays in error")
	n, err := a.CQ.Poll(make([]verbs.WC, 4))
	require.Zero(t, n)
	require.ErrorIs(t, err, root(werr), "Poll: the CQ's error once it is empty")
	testwatch.Done(t, a.QP.Done(), "a's QP ending after its CQ's fault")
	testwatch.Done(t, b.QP.Done(), "b's QP ending after a's Terminate")
	var ie *iwarp.Error
	require.ErrorAs(t, b.QP.Err(), &ie, "b's QP ends with a Terminate: %v", b.QP.Err())
	require.True(t, ie.Remote, "b's Terminate came from a: %v", ie)
	require.ErrorIs(t, a.QP.Err(), rnic.ErrDMAFault)
}

// root is the innermost error err wraps (a sticky error is the same
// value each time it is returned).
func root(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
