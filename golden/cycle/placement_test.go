package cycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// plRun drives a model: reset, the reset sweep, table commands, then the
// frames back to back with every ready high; it returns what came out.
type plRun struct {
	m      *Placement
	dma    map[uint64]byte // host memory written
	host   []byte          // host stream bytes
	hostEv []PlacementOut  // host last beats
	terms  []PlacementOut
	dones  []PlacementOut
	cycles int
	first  int // cycle of the first output
	accept int // cycle the first beat was accepted
}

func newPlRun(t *testing.T, width int) *plRun {
	m, err := NewPlacement(width, 16, 16)
	require.NoError(t, err)
	r := &plRun{m: m, dma: map[uint64]byte{}, first: -1, accept: -1}
	r.step(PlacementIn{Reset: true})
	for i := 0; i < 16; i++ {
		o := r.step(PlacementIn{})
		require.False(t, o.SReady, "no input during the reset sweep")
	}
	require.True(t, r.step(PlacementIn{}).InitDone)
	return r
}

func (r *plRun) step(in PlacementIn) PlacementOut {
	in.DMAReady, in.HostReady, in.TermReady, in.DoneReady = true, true, true, true
	if in.Data == nil {
		in.Data = make([]byte, r.m.Lanes())
	}
	o := r.m.Step(in)
	if o.DMAValid {
		for i := 0; i < r.m.Lanes(); i++ {
			if o.DMAStrb>>i&1 != 0 {
				r.dma[o.DMAAddr+uint64(i)] = o.DMAData[i]
			}
		}
	}
	if o.HostValid {
		for i := 0; i < r.m.Lanes(); i++ {
			if o.HostKeep>>i&1 != 0 {
				r.host = append(r.host, o.HostData[i])
			}
		}
		if o.HostLast {
			r.hostEv = append(r.hostEv, o)
		}
	}
	if o.TermValid {
		r.terms = append(r.terms, o)
	}
	if o.DoneValid {
		r.dones = append(r.dones, o)
	}
	if (o.DMAValid || o.HostValid || o.TermValid) && r.first < 0 {
		r.first = r.cycles
	}
	r.cycles++
	return o
}

func (r *plRun) cmd(c PlacementCmd) { r.step(PlacementIn{Cmd: c}) }

// send feeds one ULPDU of connection (pd, qp) and lets the pipeline drain.
func (r *plRun) send(u []byte, pd, qp uint32) {
	l := r.m.Lanes()
	for off := 0; off < len(u); {
		n := min(l, len(u)-off)
		beat := make([]byte, l)
		copy(beat, u[off:off+n])
		in := PlacementIn{Data: beat, Keep: 1<<n - 1, Valid: true, Last: off+n == len(u), Len: uint16(len(u)), PD: pd, QP: qp, Rev: true}
		if n == 64 {
			in.Keep = ^uint64(0)
		}
		if r.step(in).SReady {
			if r.accept < 0 {
				r.accept = r.cycles - 1
			}
			off += n
		}
	}
	for i := 0; i < 8; i++ {
		r.step(PlacementIn{})
	}
}

func writeSeg(stag mem.STag, to uint64, payload []byte) []byte {
	u := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)), STag: uint32(stag), TO: to}.Append(nil)
	return append(u, payload...)
}

func payload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return p
}

var plEntry = PlacementEntry{Entry: mem.Entry{Valid: true, Key: 0x5A, PD: 7, Base: 0x10000, Length: 4096, Access: mem.RemoteWrite}, Addr: 0xABC_0003}

// A valid RDMA Write lands exactly at Addr + (TO - Base) and nowhere else,
// at both widths, in blocks aligned to the data width.
func TestPlacementWritePlaces(t *testing.T) {
	for _, w := range []int{64, 512} {
		r := newPlRun(t, w)
		r.cmd(PlacementCmd{Kind: CmdCommit, Index: 3, Entry: plEntry})
		p := payload(300)
		r.send(writeSeg(mem.MakeSTag(3, 0x5A), 0x10000+100, p), 7, 9)
		require.Len(t, r.dma, len(p), "width %d", w)
		for j, b := range p {
			assert.Equal(t, b, r.dma[0xABC_0003+100+uint64(j)], "width %d byte %d", w, j)
		}
		assert.Empty(t, r.terms)
		assert.Empty(t, r.host)
	}
}

// A paged entry translates through the page list, page by page.
func TestPlacementPagedTranslation(t *testing.T) {
	r := newPlRun(t, 64)
	e := plEntry
	e.Paged, e.Addr, e.PBL, e.Length = true, 0xFF0, 14, 8192 // slots 14, 15, then 0 (wrap)
	pages := []uint64{0x7000_0000, 0x3000_0000, 0x5000_0000}
	for i, pg := range pages {
		r.cmd(PlacementCmd{Kind: CmdPage, Slot: uint32(14 + i), Addr: pg})
	}
	r.cmd(PlacementCmd{Kind: CmdCommit, Index: 1, Entry: e})
	p := payload(4200)
	r.send(writeSeg(mem.MakeSTag(1, 0x5A), 0x10000, p), 7, 1)
	require.Len(t, r.dma, len(p))
	for j, b := range p {
		v := 0xFF0 + uint64(j)
		assert.Equal(t, b, r.dma[pages[v>>12]+v&0xFFF], "byte %d", j)
	}
}

// Hostile tagged segments write nothing and raise the Terminate that
// golden/iwarp/mem.Check's fault maps to, with the DDP header copied.
func TestPlacementHostileTagged(t *testing.T) {
	for _, c := range []struct {
		name string
		stag mem.STag
		pd   uint32
		to   uint64
		n    int
		want rdmap.Cause
	}{
		{"wrong key", mem.MakeSTag(3, 0x5B), 7, 0x10000, 10, rdmap.DDPInvalidSTag},
		{"index past the table", mem.MakeSTag(99, 0x5A), 7, 0x10000, 10, rdmap.DDPInvalidSTag},
		{"wrong PD", mem.MakeSTag(3, 0x5A), 8, 0x10000, 10, rdmap.DDPSTagNotAssociated},
		{"one byte below", mem.MakeSTag(3, 0x5A), 7, 0xFFFF, 10, rdmap.DDPBaseBounds},
		{"one byte above", mem.MakeSTag(3, 0x5A), 7, 0x10000 + 4096 - 9, 10, rdmap.DDPBaseBounds},
		{"wrap", mem.MakeSTag(3, 0x5A), 7, ^uint64(0) - 3, 10, rdmap.DDPTOWrap},
	} {
		r := newPlRun(t, 64)
		r.cmd(PlacementCmd{Kind: CmdCommit, Index: 3, Entry: plEntry})
		u := writeSeg(c.stag, c.to, payload(c.n))
		r.send(u, c.pd, 2)
		assert.Empty(t, r.dma, c.name)
		require.Len(t, r.terms, 1, c.name)
		tm := r.terms[0]
		assert.Equal(t, c.want, tm.TermCause, c.name)
		assert.True(t, tm.TermM && tm.TermD && !tm.TermR, c.name)
		assert.Equal(t, uint16(len(u)), tm.TermSegLen, c.name)
		assert.Equal(t, u[:ddp.TaggedHeaderLen], tm.TermHdr[:ddp.TaggedHeaderLen], c.name)
	}
	// An invalidated entry and a missing right.
	r := newPlRun(t, 512)
	r.cmd(PlacementCmd{Kind: CmdCommit, Index: 3, Entry: plEntry})
	r.cmd(PlacementCmd{Kind: CmdInvalidate, Index: 3})
	r.send(writeSeg(mem.MakeSTag(3, 0x5A), 0x10000, payload(5)), 7, 2)
	e := plEntry
	e.Access = mem.LocalWrite
	r.cmd(PlacementCmd{Kind: CmdCommit, Index: 4, Entry: e})
	r.send(writeSeg(mem.MakeSTag(4, 0x5A), 0x10000, payload(5)), 7, 2)
	require.Len(t, r.terms, 2)
	assert.Equal(t, rdmap.DDPInvalidSTag, r.terms[0].TermCause)
	assert.Equal(t, rdmap.DDPInvalidSTag, r.terms[1].TermCause)
	assert.Empty(t, r.dma)
}

// Untagged segments go to the host queue whole, with their parsed header.
func TestPlacementUntaggedToHost(t *testing.T) {
	r := newPlRun(t, 64)
	u := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSendInvalidate)),
		RsvdULP1: 0xCAFE0102, QN: 0, MSN: 77, MO: 0}.Append(nil)
	u = append(u, payload(21)...)
	r.send(u, 1, 5)
	assert.Equal(t, u, r.host)
	require.Len(t, r.hostEv, 1)
	ev := r.hostEv[0]
	assert.Equal(t, rdmap.OpSendInvalidate, ev.HostOpcode)
	assert.True(t, ev.HostDDPLast)
	assert.Equal(t, uint32(77), ev.HostMSN)
	assert.Equal(t, uint32(0xCAFE0102), ev.HostInv)
	assert.Equal(t, uint32(5), ev.HostQP)
	assert.Equal(t, uint16(len(u)), ev.HostLen)
	// A bad QN is a DDP error, not a host segment.
	u[9] = 3
	r.send(u, 1, 5)
	require.Len(t, r.terms, 1)
	assert.Equal(t, rdmap.DDPInvalidQN, r.terms[0].TermCause)
	assert.Equal(t, u[:PlacementHdrBytes], r.terms[0].TermHdr[:])
}

// At 512 bits a one-beat ULPDU comes out four cycles after the cycle it is
// accepted in (input register, decision, realignment, output register);
// when its payload starts in the next host block, the trailing block comes
// one cycle later.
func TestPlacementLatency(t *testing.T) {
	for addr, lat := range map[uint64]int{0x20: PlacementLatency, 0x03: PlacementLatency + 1} {
		r := newPlRun(t, 512)
		e := plEntry
		e.Addr = addr
		r.cmd(PlacementCmd{Kind: CmdCommit, Index: 3, Entry: e})
		r.accept, r.first = -1, -1
		r.send(writeSeg(mem.MakeSTag(3, 0x5A), 0x10000, payload(40)), 7, 2)
		assert.Equal(t, lat, r.first-r.accept, "address %#x", addr)
		assert.Len(t, r.dma, 40)
	}
}

func TestNewPlacementErrors(t *testing.T) {
	for _, c := range [][3]int{{32, 16, 16}, {96, 16, 16}, {64, 12, 16}, {64, 16, 0}} {
		_, err := NewPlacement(c[0], c[1], c[2])
		assert.ErrorIs(t, err, ErrConfig, "%v", c)
	}
}

// After a failed segment, every later segment of the same connection is
// dropped without a word (RFC 5041 §7.1) until the host clears it; other
// connections go on; the ninth failed connection evicts the oldest.
func TestPlacementDropsAfterFailure(t *testing.T) {
	r := newPlRun(t, 512)
	r.cmd(PlacementCmd{Kind: CmdCommit, Index: 3, Entry: plEntry})
	r.cmd(PlacementCmd{Kind: CmdControl, DropAfterFail: true})
	good := writeSeg(mem.MakeSTag(3, 0x5A), 0x10000, payload(8))
	bad := writeSeg(mem.MakeSTag(3, 0x5B), 0x10000, payload(8))
	r.send(bad, 7, 2)
	require.Len(t, r.terms, 1)
	r.send(good, 7, 2)
	r.send(bad, 7, 2)
	assert.Empty(t, r.dma, "connection 2 is dropped")
	assert.Len(t, r.terms, 1, "without another Terminate")
	r.send(good, 7, 3)
	assert.Len(t, r.dma, 8, "connection 3 goes on")
	r.cmd(PlacementCmd{Kind: CmdConnClear, QP: 2})
	clear(r.dma)
	r.send(good, 7, 2)
	assert.Len(t, r.dma, 8, "connection 2 after the clear")

	// Connections 10..18 fail; 10 is forgotten, 11..18 are dropped.
	for qp := uint32(10); qp < 10+PlacementFailSlots+1; qp++ {
		r.send(bad, 7, qp)
	}
	clear(r.dma)
	r.send(good, 7, 10)
	assert.Len(t, r.dma, 8)
	clear(r.dma)
	r.send(good, 7, 11)
	assert.Empty(t, r.dma)

	// Off (the reset value), every segment is checked on its own.
	r.cmd(PlacementCmd{Kind: CmdControl})
	r.send(good, 7, 12)
	assert.Len(t, r.dma, 8)
}

// A placed Read Response segment with L=1 raises one completion, with its
// connection, STag, TO and length, no earlier than its last DMA write; a
// middle segment, a Write and a failed Read Response raise none.
func TestPlacementReadResponseDone(t *testing.T) {
	for _, w := range []int{64, 512} {
		for _, n := range []int{0, 1, 50, 300} {
			r := newPlRun(t, w)
			e := plEntry
			e.Access = mem.LocalWrite
			r.cmd(PlacementCmd{Kind: CmdCommit, Index: 3, Entry: e})
			rr := func(last bool, key uint8, to uint64) []byte {
				u := ddp.TaggedFields{Last: last, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadResponse)),
					STag: uint32(mem.MakeSTag(3, key)), TO: to}.Append(nil)
				return append(u, payload(n)...)
			}
			r.send(rr(false, 0x5A, 0x10000), 7, 4)
			assert.Empty(t, r.dones, "width %d: not the last segment", w)
			lastDMA := -1
			r.first = -1
			u := rr(true, 0x5A, 0x10200)
			l := r.m.Lanes()
			for off := 0; off < len(u) || off == 0; {
				m := min(l, len(u)-off)
				beat := make([]byte, l)
				copy(beat, u[off:off+m])
				if r.step(PlacementIn{Data: beat, Keep: 1<<m - 1 | ^uint64(0)*uint64(m/64), Valid: true, Last: off+m == len(u), Len: uint16(len(u)), PD: 7, QP: 4, Rev: true}).SReady {
					off += m
				}
			}
			doneAt := -1
			for i := 0; i < 10; i++ {
				o := r.step(PlacementIn{})
				if o.DMAValid {
					lastDMA = r.cycles
				}
				if o.DoneValid && doneAt < 0 {
					doneAt = r.cycles
				}
			}
			require.Equal(t, 1, len(r.dones), "width %d payload %d", w, n)
			d := r.dones[0]
			assert.Equal(t, uint32(4), d.DoneQP)
			assert.Equal(t, uint32(mem.MakeSTag(3, 0x5A)), d.DoneSTag)
			assert.Equal(t, uint64(0x10200), d.DoneTO)
			assert.Equal(t, uint16(len(u)), d.DoneLen)
			assert.GreaterOrEqual(t, doneAt, lastDMA, "width %d payload %d: the completion follows the last write", w, n)
			assert.Equal(t, 2*n, len(r.dma))
			if n > 0 { // a zero-length segment is not checked (RFC 5041 §5.2)
				r.send(rr(true, 0x5B, 0x10000), 7, 5) // wrong key
				assert.Equal(t, 1, len(r.dones))
			}
		}
	}
}
