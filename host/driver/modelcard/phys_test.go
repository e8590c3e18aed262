package modelcard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/modelcard"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

func TestIOVATable(t *testing.T) {
	p, err := modelcard.NewPhys(64)
	require.NoError(t, err)
	defer p.Close()
	buf := make([]byte, 5000)
	m, err := p.Map(buf)
	require.NoError(t, err)
	require.True(t, m.Contiguous())
	b, err := p.DMA().Alloc(100)
	require.NoError(t, err)
	require.NotEqual(t, m.IOVA, b.IOVA)
	require.Zero(t, b.IOVA%4096)
	require.NoError(t, p.Unmap(m))
	require.ErrorIs(t, p.Unmap(m), driver.ErrInvalid, "twice")
	require.NoError(t, p.DMA().Free(b))
	require.ErrorIs(t, p.DMA().Free(b), driver.ErrInvalid, "twice")
	_, err = p.Map(nil)
	require.ErrorIs(t, err, driver.ErrInvalid)
}

// TestDMAFault: a region whose mapping the IOMMU no longer holds makes the
// card's placement fault; the QP ends with a *rnic.DMAFaultError naming
// the address, and the device reports it.
func TestDMAFault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := verbstest.Pair(t, ctx, modelcard.Kind, 8192)
	phys := b.Ctx.Card().(*modelcard.Card).Phys
	require.True(t, phys.Revoke(b.Buf))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Signaled: true,
		SGL: []verbs.SGE{a.MR.SGE(0, 100)}, RemoteAddr: b.MR.Addr() + 4096, RKey: b.MR.RKey()}))
	select {
	case <-b.QP.Done():
	case <-ctx.Done():
		t.Fatal("the faulted QP did not end")
	}
	require.ErrorIs(t, b.QP.Err(), rnic.ErrDMAFault)
	ev := <-b.Ctx.Events()
	require.Equal(t, driver.EventQPFatal, ev.Type)
	require.ErrorIs(t, ev.Err, rnic.ErrDMAFault)
	var de *rnic.DMAFaultError
	require.ErrorAs(t, b.QP.Err(), &de)
	require.True(t, de.Write)
	require.Equal(t, b.QP.Num(), de.QPN)
}

func TestOpenByName(t *testing.T) {
	c, err := driver.Open("") // the default card
	require.NoError(t, err)
	require.Equal(t, modelcard.Kind, c.Info().Kind)
	require.Equal(t, 30, c.Info().MaxSGE)
	require.NoError(t, c.Close())
	c, err = driver.Open(modelcard.Kind + ":512")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = driver.Open(modelcard.Kind + ":x")
	require.ErrorIs(t, err, driver.ErrInvalid)
	_, err = driver.Open(modelcard.Kind + ":99")
	require.ErrorIs(t, err, driver.ErrInvalid)
}

// TestLostCQE: a CQ page the IOMMU refuses puts the CQ in error (the
// card model's CQ_ERROR): its user gets the completions before the lost
// slot, then a *rnic.CQError naming the CQE's write, never a hang.
func TestLostCQE(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := verbstest.Pair(t, ctx, modelcard.Kind, 4096)
	verbstest.LostCQE(t, ctx, a, b, a.Ctx.Card().(*modelcard.Card).Phys)
}
