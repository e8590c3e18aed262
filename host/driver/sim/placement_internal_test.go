//go:build cosim

package sim

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// The card's placement engine follows the golden table through
// registration, remote invalidation and deregistration (each agreeing
// refusal is the RTL's own Terminate); when the two tables are made to
// differ behind the card's back, in either direction, the segment is a
// mismatch and not a byte lands.
func TestPlacementFollowsAndDisagreementIsCaught(t *testing.T) {
	var checked atomic.Uint64
	p, err := newPlacement(256, &checked)
	require.NoError(t, err)
	defer p.close()
	p.tab = mem.NewTable()
	pd := p.tab.AllocPD()
	reg := func(n int, qp uint32) (*mem.MR, []byte) {
		buf := make([]byte, n)
		mr, err := p.registerMR(pd, buf, 0x1000, mem.RemoteWrite|mem.LocalWrite, qp)
		require.NoError(t, err)
		require.Less(t, mr.STag.Index(), uint32(4096))
		return mr, buf
	}
	small, smallBuf := reg(300, 0)   // a page list
	big, bigBuf := reg(200000, 0)    // contiguous
	scoped, scopedBuf := reg(100, 7) // stream-scoped: remotely invalidatable
	for _, c := range []struct {
		mr    *mem.MR
		paged bool
	}{{small, true}, {big, false}, {scoped, true}} {
		prog, ok := p.prog.Lookup(c.mr.STag.Index())
		require.True(t, ok)
		require.Equal(t, c.paged, prog.Translation.Paged, "%v", c.mr.STag)
	}
	data := make([]byte, 2000)
	for i := range data {
		data[i] = byte(i*31 + 7)
	}
	write := func(mr *mem.MR, to uint64, payload []byte) (mem.Fault, error) {
		ulpdu := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
			STag: uint32(mr.STag), TO: to}.Append(nil)
		ulpdu = append(ulpdu, payload...)
		return p.place(mem.Request{STag: mr.STag, PD: pd.ID, QP: 7, TO: to, Len: uint64(len(payload)), Use: mem.UseRemoteWrite}, true, ulpdu, payload)
	}
	before := checked.Load()
	for _, c := range []struct {
		mr  *mem.MR
		buf []byte
		off int
		n   int
	}{{small, smallBuf, 10, 200}, {big, bigBuf, 4090, 1400}, {scoped, scopedBuf, 0, 100}} {
		f, err := write(c.mr, 0x1000+uint64(c.off), data[:c.n])
		require.NoError(t, err)
		require.Equal(t, mem.OK, f)
		require.Equal(t, data[:c.n], c.buf[c.off:c.off+c.n])
	}
	require.Greater(t, checked.Load(), before, "the placements' cycles are counted")

	// Refusals the RTL and the golden table agree on.
	f, err := write(small, 0x1000+250, data[:51])
	require.NoError(t, err)
	require.Equal(t, mem.BaseBounds, f)
	require.True(t, p.tab.RemoteInvalidate(scoped.STag, pd.ID, 7))
	require.NoError(t, p.invalidated(scoped.STag))
	prog, _ := p.prog.Lookup(scoped.STag.Index())
	require.False(t, prog.Entry.Valid, "the remote invalidation reached the RTL's table")
	f, err = write(scoped, 0x1000, data[:10])
	require.NoError(t, err)
	require.Equal(t, mem.InvalidSTag, f)
	require.Equal(t, data[:100], scopedBuf, "nothing lands after the invalidation")

	// The RTL's table alone loses small's entry.
	p.mu.Lock()
	require.NoError(t, p.prog.Invalidate(small.STag.Index()))
	require.NoError(t, p.flush())
	p.mu.Unlock()
	old := bytes.Clone(smallBuf)
	f, err = write(small, 0x1000, data[:300])
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "the RTL raised Terminate")
	require.NotEqual(t, mem.OK, f)
	require.Equal(t, old, smallBuf)
	// The golden table alone loses big's.
	require.NoError(t, p.tab.Invalidate(big.STag, pd.ID))
	old = bytes.Clone(bigBuf)
	f, err = write(big, 0x1000, data[:300])
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "the RTL took it")
	require.Equal(t, mem.InvalidSTag, f)
	require.Equal(t, old, bigBuf, "nothing lands")

	// Deregistration removes the region from both; the engine still runs.
	require.NoError(t, p.deregisterMR(scoped))
	_, ok := p.prog.Lookup(scoped.STag.Index())
	require.False(t, ok)
	require.ErrorIs(t, p.deregisterMR(scoped), driver.ErrInvalid)
	f, err = write(scoped, 0x1000, data[:10])
	require.NoError(t, err)
	require.Equal(t, mem.InvalidSTag, f)
}

func TestCheckSendWR(t *testing.T) {
	require.NoError(t, checkSendWR(&iwarp.SendWR{Opcode: iwarp.WRWrite}))
	require.ErrorIs(t, checkSendWR(&iwarp.SendWR{Opcode: iwarp.WRLocalInvalidate}), driver.ErrInvalid)
	require.ErrorIs(t, checkSendWR(&iwarp.SendWR{Opcode: iwarp.WRBindMW}), driver.ErrInvalid)
}

// land, the check between the RTL's DMA writes and the memory, refuses
// every way a write can go wrong, writing nothing then.
func TestLandRefusesStrayWrites(t *testing.T) {
	var checked atomic.Uint64
	p, err := newPlacement(64, &checked)
	require.NoError(t, err)
	defer p.close()
	p.tab = mem.NewTable()
	pd := p.tab.AllocPD()
	buf, other := make([]byte, 100), make([]byte, 100)
	mr, err := p.registerMR(pd, buf, 0, mem.RemoteWrite, 0)
	require.NoError(t, err)
	omr, err := p.registerMR(pd, other, 0, mem.RemoteWrite, 0)
	require.NoError(t, err)
	iova := func(r *mem.MR, off uint64) uint64 {
		reg := p.regions[r.STag.Index()]
		k := (reg.off + off) >> pageShift
		return reg.pages[k]<<pageShift | (reg.off+off)&(pageSize-1)
	}
	payload := []byte("16 payload bytes")
	req := mem.Request{STag: mr.STag, PD: pd.ID, TO: 40, Len: 16, Use: mem.UseRemoteWrite}
	// The writes that place payload at offset 40, block by block (8 lanes).
	good := func() []hwsim.PlacementDMA {
		var ws []hwsim.PlacementDMA
		for off := uint64(40); off < 56; {
			a := iova(mr, off)
			blk := a &^ 7
			w := hwsim.PlacementDMA{Addr: blk, Data: make([]byte, 8)}
			for l := uint64(0); l < 8; l++ {
				if o := off + l - (a - blk); blk+l >= a && o < 56 {
					w.Strb |= 1 << l
					w.Data[l] = payload[o-40]
				}
			}
			off += 8 - (a - blk)
			ws = append(ws, w)
		}
		return ws
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range []struct {
		name string
		bend func([]hwsim.PlacementDMA) []hwsim.PlacementDMA
		want string
	}{
		{"wrong byte", func(ws []hwsim.PlacementDMA) []hwsim.PlacementDMA { ws[0].Data[7] ^= 1; return ws }, "the payload has"},
		{"byte missing", func(ws []hwsim.PlacementDMA) []hwsim.PlacementDMA { ws[len(ws)-1].Strb >>= 1; return ws }, "was not written"},
		{"written twice", func(ws []hwsim.PlacementDMA) []hwsim.PlacementDMA { return append(ws, ws[0]) }, "written twice"},
		{"outside the segment", func(ws []hwsim.PlacementDMA) []hwsim.PlacementDMA {
			return append(ws, hwsim.PlacementDMA{Addr: iova(mr, 80) &^ 7, Strb: 1, Data: make([]byte, 8)})
		}, "outside the segment"},
		{"another region", func(ws []hwsim.PlacementDMA) []hwsim.PlacementDMA {
			return append(ws, hwsim.PlacementDMA{Addr: iova(omr, 0) &^ 7, Strb: 0xff, Data: make([]byte, 8)})
		}, "lands in"},
		{"unmapped", func(ws []hwsim.PlacementDMA) []hwsim.PlacementDMA {
			return append(ws, hwsim.PlacementDMA{Addr: 0x1000, Strb: 1, Data: make([]byte, 8)})
		}, "no region is mapped"},
	} {
		err := p.land(req, c.bend(good()), payload)
		require.ErrorContains(t, err, c.want, c.name)
		require.Equal(t, make([]byte, 100), buf, "%s: nothing lands", c.name)
		require.Equal(t, make([]byte, 100), other, "%s: nothing lands", c.name)
	}
	require.NoError(t, p.land(req, good(), payload))
	require.Equal(t, payload, buf[40:56])
}
