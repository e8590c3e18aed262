package verbstest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/verbs"
)

// memoryWRs: memory windows bound and STags invalidated by send-queue work
// requests (RFC 5040 §6.3, §8.1.1 #7): they take effect in send-queue order,
// a window serves remote access to its range only, an invalidated STag
// serves nothing, and a refused one completes with an error and fails the
// QP with a Local Catastrophic Terminate (RFC 5040 §7.1).
func (s *suite) memoryWRs(t *testing.T) {
	ctx := timeout(t)
	bindable := verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite | verbs.AccessMWBind
	t.Run("bind-use-invalidate", func(t *testing.T) {
		a, b := Pair(t, ctx, s.dev, 4096)
		region := make([]byte, 1024)
		rmr, err := b.PD.RegMR(region, bindable)
		require.NoError(t, err)
		w2, err := b.PD.AllocMW(true)
		require.NoError(t, err)
		w1, err := b.PD.AllocMW(false)
		require.NoError(t, err)
		// A type 2 window for Writes on [256, 512), a type 1 for Reads on
		// [512, 640), posted together: they complete in order.
		require.NoError(t, b.QP.PostSend(
			verbs.SendWR{ID: 1, Opcode: verbs.WRBindMW, Signaled: true, Bind: w2.Bind(rmr, rmr.Addr()+256, 256, verbs.AccessRemoteWrite)},
			verbs.SendWR{ID: 2, Opcode: verbs.WRBindMW, Signaled: true, Bind: w1.Bind(rmr, rmr.Addr()+512, 128, verbs.AccessRemoteRead)}))
		require.Equal(t, verbs.WCBindMW, Expect(t, ctx, b.CQ, 1, verbs.WCSuccess).Opcode)
		require.Equal(t, verbs.WCBindMW, Expect(t, ctx, b.CQ, 2, verbs.WCSuccess).Opcode)
		s.fill(a.Buf[:200])
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 200)},
			RemoteAddr: rmr.Addr() + 300, RKey: w2.RKey()}))
		Expect(t, ctx, a.CQ, 3, verbs.WCSuccess)
		s.fill(region[512:640])
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(1024, 100)},
			RemoteAddr: rmr.Addr() + 540, RKey: w1.RKey()}))
		Expect(t, ctx, a.CQ, 4, verbs.WCSuccess)
		equal(t, a.Buf[:200], region[300:500], "Write through a type 2 window")
		equal(t, region[540:640], a.Buf[1024:1124], "Read through a type 1 window")
		// Local Invalidate of the type 2 window, then of a region of a's.
		inv := make([]byte, 64)
		imr, err := a.PD.RegMR(inv, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		require.NoError(t, err)
		require.NoError(t, b.QP.PostSend(verbs.SendWR{ID: 5, Opcode: verbs.WRLocalInv, InvalidateSTag: w2.RKey(), Signaled: true}))
		require.Equal(t, verbs.WCLocalInv, Expect(t, ctx, b.CQ, 5, verbs.WCSuccess).Opcode)
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 6, Opcode: verbs.WRLocalInv, InvalidateSTag: imr.RKey(), Signaled: true}))
		require.Equal(t, verbs.WCLocalInv, Expect(t, ctx, a.CQ, 6, verbs.WCSuccess).Opcode)
		// The window is dead: a Write through it is refused by b with a
		// tagged buffer Terminate, and nothing lands.
		before := append([]byte(nil), region...)
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 7, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.MR.SGE(0, 8)},
			RemoteAddr: rmr.Addr() + 300, RKey: w2.RKey()}, verbs.SendWR{ID: 8, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 8)},
			RemoteAddr: rmr.Addr(), RKey: rmr.RKey()}))
		wc, err := a.CQ.Wait(ctx)
		require.NoError(t, err)
		require.NotEqual(t, verbs.WCSuccess, wc.Status, "a Read behind a Write through an invalidated window")
		<-b.QP.Done()
		var ie *iwarp.Error
		require.ErrorAs(t, b.QP.Err(), &ie)
		require.Equal(t, rdmap.DDPInvalidSTag, ie.Cause, "b refuses the Write: %v", ie)
		<-a.QP.Done()
		equal(t, before, region, "the region after a Write through an invalidated window")
	})
	// refused runs wr on a fresh pair's b and wants status: the QP fails
	// with a Local Catastrophic Terminate, and the WR behind is flushed.
	refused := func(t *testing.T, status verbs.WCStatus, wr func(a, b *End, rmr *verbs.MR) verbs.SendWR) {
		a, b := Pair(t, ctx, s.dev, 4096)
		rmr, err := b.PD.RegMR(make([]byte, 1024), bindable)
		require.NoError(t, err)
		w := wr(a, b, rmr)
		w.ID, w.Signaled = 1, true
		require.NoError(t, b.QP.PostSend(w, verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Signaled: true}))
		wc := Expect(t, ctx, b.CQ, 1, status)
		require.Equal(t, map[verbs.WROpcode]verbs.WCOpcode{verbs.WRBindMW: verbs.WCBindMW, verbs.WRLocalInv: verbs.WCLocalInv}[w.Opcode], wc.Opcode)
		Expect(t, ctx, b.CQ, 2, verbs.WCWRFlushErr)
		<-b.QP.Done()
		var be *iwarp.Error
		require.ErrorAs(t, b.QP.Err(), &be)
		require.False(t, be.Remote, "b's own error: %v", be)
		require.Equal(t, rdmap.RDMAPLocalCatastrophic, be.Cause)
		<-a.QP.Done()
		var ie *iwarp.Error
		require.ErrorAs(t, a.QP.Err(), &ie)
		require.True(t, ie.Remote, "a learns from b's Terminate: %v", ie)
		require.Equal(t, rdmap.RDMAPLocalCatastrophic, ie.Cause)
	}
	t.Run("bind-without-right", func(t *testing.T) {
		refused(t, verbs.WCMWBindErr, func(a, b *End, _ *verbs.MR) verbs.SendWR {
			mw, err := b.PD.AllocMW(true)
			require.NoError(t, err)
			return verbs.SendWR{Opcode: verbs.WRBindMW, Bind: mw.Bind(b.MR, b.MR.Addr(), 64, verbs.AccessRemoteWrite)}
		})
	})
	t.Run("bind-past-region", func(t *testing.T) {
		refused(t, verbs.WCMWBindErr, func(a, b *End, rmr *verbs.MR) verbs.SendWR {
			mw, err := b.PD.AllocMW(false)
			require.NoError(t, err)
			return verbs.SendWR{Opcode: verbs.WRBindMW, Bind: mw.Bind(rmr, rmr.Addr()+1000, 64, verbs.AccessRemoteRead)}
		})
	})
	t.Run("invalidate-other-PD", func(t *testing.T) {
		refused(t, verbs.WCLocProtErr, func(a, b *End, _ *verbs.MR) verbs.SendWR {
			other, err := b.Ctx.AllocPD()
			require.NoError(t, err)
			omr, err := other.RegMR(make([]byte, 64), verbs.AccessRemoteWrite)
			require.NoError(t, err)
			return verbs.SendWR{Opcode: verbs.WRLocalInv, InvalidateSTag: omr.RKey()}
		})
	})
}
