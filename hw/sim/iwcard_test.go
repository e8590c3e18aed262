package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// TestCardHarnessBAR0 reads the card's identification through BAR0, the
// scratch register back, and gets SLVERR for a doorbell written with
// fewer than four byte strobes, at both widths.
func TestCardHarnessBAR0(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			c, err := NewCard(CardConfig{Width: w, Seed: 1, Mem: &Windows{}, Timing: AXITiming{ReadLatency: 1, ReadJitter: 300, Reorder: true, Ready: 200}})
			require.NoError(t, err)
			defer c.Close()
			id, err := c.RegRead(cs.ID)
			require.NoError(t, err)
			require.Equal(t, uint32(cs.VendorID|cs.DeviceID<<16), id)
			caps, err := c.RegRead(cs.CapsDatapath)
			require.NoError(t, err)
			require.Equal(t, uint32(w/8), caps&0xff)
			require.NoError(t, c.RegWrite(cs.Scratch, 0xdeadbeef))
			v, err := c.RegRead(cs.Scratch)
			require.NoError(t, err)
			require.Equal(t, uint32(0xdeadbeef), v)
			err = c.RegWriteStrb(cs.CQDBBase, 1, 0x3)
			var re *RegRespError
			require.ErrorAs(t, err, &re)
			require.True(t, errors.Is(err, ErrRegResp))
			require.Equal(t, uint32(2), re.Resp)
			// The tables clear after reset: INIT_DONE within a bound.
			require.NoError(t, c.RunUntil(func() bool {
				s, err := c.RegRead(cs.Status)
				require.NoError(t, err)
				return s&1 != 0
			}, 100_000))
		})
	}
}

// The whole-card co-simulation: the Verilated card (Card) and the card
// model (host/driver/cardmodel) programmed through BAR0 with the same
// register writes, as host/driver/rnic programs a card, with the same
// rings and regions in host memory; their DMA writes are compared per
// stream (docs/card-rtl.md: the engines run concurrently, so the global
// order is not part of the contract).

// Host memory layout of the co-simulation (IOVAs).
const (
	wcEQ     = 0x10_0000   // EQ: 1024 entries of 16 bytes
	wcStat   = 0x20_0000   // QP status table: 1024 x 32 bytes
	wcCQ     = 0x40_0000   // + n<<16: CQ n, 1024 entries of 32 bytes
	wcSQ     = 0x100_0000  // + qpn<<16
	wcTXS    = 0x800_0000  // + qpn<<16
	wcRXS    = 0x1000_0000 // + qpn<<16
	wcRegion = 0x2000_0000 // + qpn<<16: the QP's registered region
	wcSrc    = 0x3000_0000 // + qpn<<16: the QP's two gather sources (local read)
	wcSrcLen = 1 << 14     // bytes of each gather source
	wcEQLog  = 10          //
	wcCQLog  = 10          //
	wcRegLen = 1 << 16     // region bytes
	wcNCQ    = 2           // CQs 1 and 2
	wcVector = 5           // the EQ's interrupt vector
)

type wcKey struct {
	kind string // "txs", "stat", "cqe", "eqe"
	obj  uint32 // QP or CQ number
}

// wcQP is one QP of the whole-card co-simulation.
type wcQP struct {
	n, pd          uint32
	sqLog, txsLog  uint32
	rxsLog         uint32
	mulpdu         uint32
	markersTX      bool
	markersRX      bool
	crc            bool
	sendCQ         uint32
	pi             uint16 // SQ blocks posted
	posted         int    // WQEs posted
	pending        bool   // an SQ_PI doorbell is due
	stag           mem.STag
	src            [2]mem.STag // gather sources: wcSrc + qpn<<16 (+ 32 KiB)
	peer           mpa.Framer  // the peer's framer (our receive stream)
	rxWritten      uint32      // receive stream octets written and announced
	peerRRMSN      uint32      // the peer's next Read Request MSN
	reads          []wcRead    // RDMA Reads posted and not yet answered by the peer
	mTXSCI, rTXSCI uint32      // TXS_CI given back (model, RTL)
}

// wcRead is an RDMA Read a QP posted: its sink in the QP's region, and
// whether it is fenced behind Reads posted before it (it goes out only
// once they are answered).
type wcRead struct {
	to     uint64
	n      int
	fenced bool
}

type wcBench struct {
	t      testing.TB
	w      int
	seed   uint64
	rng    Rand
	rtl    *Card
	model  *cardmodel.Card
	mh     modelHost
	win    map[uint64][]byte // the RTL's windows by IOVA
	qps    []*wcQP
	mIRQ   int
	rIRQ   int
	mWrite map[wcKey][][]byte // the model's writes per stream
	rWrite map[wcKey][][]byte // the RTL's
	mAddr  map[wcKey][]uint64
	rAddr  map[wcKey][]uint64
	mPlace map[uint32][]placed // placed bytes per QP
	rPlace map[uint32][]placed
	faults []AXIFault
	ws     *Windows
	// refused are the host ranges [lo, hi) both hosts refuse (the RTL's
	// window unmapped); faults there are expected, not failures.
	refused [][2]uint64
	// onRTLWrite, if set, sees the stream of each of the RTL's writes.
	onRTLWrite func(wcKey)
	// txsEnd is the stream offset after each card's last transmit ring
	// write per QP ([0] the model's, [1] the RTL's), and rewinds counts
	// the writes that went back: the card aborts a message whose payload
	// read faulted after FPDUs of it were written (never published), and
	// writes the Terminate at the first one's place. cut marks the QPs
	// allowed to: their writes are compared as a stream with rewinds.
	txsEnd  [2]map[uint32]int
	rewinds [2]map[uint32]int
	cut     map[uint32]bool
	// wf: QPs a payload write of was refused. The model stops at that
	// write; the RTL may place more of the QP's segments (and consume
	// their FPDUs) before it hears of it: the model's placed bytes are a
	// prefix of the RTL's, and the RTL's RXS_CI may be past the model's.
	wf map[uint32]bool
	// rf: QPs a transmit ring page of was refused. The model stops at the
	// refused FPDU; the RTL hears of it a write response later and may
	// have written more FPDUs past the refused page, never published: its
	// writes are placed in the stream forward of the gap the refused ones
	// leave, and the model's stream is a prefix of the RTL's.
	rf map[uint32]bool
}

// wcRTLMem is the RTL's host memory: the windows, every write recorded.
type wcRTLMem struct{ b *wcBench }

func (m wcRTLMem) ReadMem(a uint64, p []byte) error { return m.b.ws.ReadMem(a, p) }
func (m wcRTLMem) WriteMem(a uint64, p []byte) error {
	if err := m.b.ws.WriteMem(a, p); err != nil {
		return err
	}
	m.b.record(true, a, p)
	return nil
}

// classify names the stream a DMA write at a belongs to.
func (b *wcBench) classify(a uint64) (wcKey, bool) {
	switch {
	case a >= wcEQ && a < wcEQ+16<<wcEQLog:
		return wcKey{"eqe", 0}, true
	case a >= wcStat && a < wcStat+32*cs.MaxQP:
		return wcKey{"stat", uint32((a - wcStat) / 32)}, true
	case a >= wcCQ && a < wcCQ+(wcNCQ+1)<<16:
		return wcKey{"cqe", uint32((a - wcCQ) >> 16)}, true
	case a >= wcTXS && a < wcRXS:
		return wcKey{"txs", uint32((a - wcTXS) >> 16)}, true
	case a >= wcRegion && a < wcRegion+cs.MaxQP<<16:
		return wcKey{"payload", uint32((a - wcRegion) >> 16)}, true
	}
	return wcKey{}, false
}

func (b *wcBench) record(rtl bool, a uint64, data []byte) {
	k, ok := b.classify(a)
	if !ok {
		b.t.Errorf("seed %d: a DMA write at %#x outside every stream (rtl %v)", b.seed, a, rtl)
		return
	}
	ws, as, pl := b.mWrite, b.mAddr, b.mPlace
	if rtl {
		ws, as, pl = b.rWrite, b.rAddr, b.rPlace
		if b.onRTLWrite != nil {
			b.onRTLWrite(k)
		}
	}
	if k.kind == "payload" {
		for i, x := range data {
			pl[k.obj] = append(pl[k.obj], placed{a + uint64(i), x})
		}
		return
	}
	if k.kind == "txs" {
		b.rewind(rtl, k, a, len(data))
	}
	ws[k] = append(ws[k], append([]byte(nil), data...))
	as[k] = append(as[k], a)
}

// rewind places a transmit ring write of n octets at a in its QP's stream:
// at the stream offset after the card's last write, or before it (within
// a ring's size) when the card went back over bytes it never published,
// whose writes it then drops from the record.
func (b *wcBench) rewind(rtl bool, k wcKey, a uint64, n int) {
	side := 0
	ws := b.mWrite
	if rtl {
		side, ws = 1, b.rWrite
	}
	if b.txsEnd[side] == nil {
		b.txsEnd[side], b.rewinds[side] = map[uint32]int{}, map[uint32]int{}
	}
	size := 0
	for _, q := range b.qps {
		if q.n == k.obj {
			size = 1 << q.txsLog
		}
	}
	if size == 0 {
		b.t.Fatalf("seed %d: a transmit ring write at %#x for QP %d, which the bench did not create", b.seed, a, k.obj)
	}
	end := b.txsEnd[side][k.obj]
	pos := int(a - (wcTXS + uint64(k.obj)<<16))
	at := end - ((end-pos)%size+size)%size
	if rtl && b.rf[k.obj] && at < end {
		at = end + ((pos-end)%size+size)%size // past the refused writes' gap
	}
	if at < end {
		b.rewinds[side][k.obj]++
		keep := at
		l := ws[k]
		for i, w := range l {
			if keep < len(w) {
				l[i] = w[:keep]
				ws[k] = l[:i+1]
				break
			}
			keep -= len(w)
		}
	}
	b.txsEnd[side][k.obj] = at + n
}

// alloc maps a zeroed window of n bytes at iova for the RTL (the model's
// memory is sparse).
func (b *wcBench) alloc(iova uint64, n int) {
	m := make([]byte, n)
	require.NoError(b.t, b.ws.Map(iova, m))
	b.win[iova] = m
}

// refuse makes both hosts refuse DMA to the window at iova from now on:
// the RTL's is unmapped, the model's host answers an error there.
func (b *wcBench) refuse(iova uint64) {
	b.t.Helper()
	m, ok := b.win[iova]
	require.True(b.t, ok, "no window at %#x", iova)
	require.NoError(b.t, b.ws.Unmap(iova))
	b.refused = append(b.refused, [2]uint64{iova, iova + uint64(len(m))})
}

func (b *wcBench) isRefused(a uint64) bool {
	for _, r := range b.refused {
		if a >= r[0] && a < r[1] {
			return true
		}
	}
	return false
}

// faultRegs reads STATUS and the DMA_FAULT_* registers of one card.
func faultRegs(t testing.TB, read func(uint32) (uint32, error)) [4]uint32 {
	var r [4]uint32
	for i, off := range []uint32{cs.Status, cs.DMAFaultAddrLo, cs.DMAFaultAddrHi, cs.DMAFaultInfo} {
		v, err := read(off)
		require.NoError(t, err)
		r[i] = v
	}
	return r
}

// put writes p at iova in both hosts' memory.
func (b *wcBench) put(iova uint64, p []byte) {
	b.mh.mem.Write(iova, p)
	for base, m := range b.win {
		if iova >= base && iova+uint64(len(p)) <= base+uint64(len(m)) {
			storeBytes(m[iova-base:], p)
			return
		}
	}
	b.t.Fatalf("seed %d: put at %#x of %d bytes outside every window", b.seed, iova, len(p))
}

// w32 writes a BAR0 register of both cards.
func (b *wcBench) w32(off, v uint32) {
	b.t.Helper()
	require.NoError(b.t, b.model.Write32(off, v), "seed %d: model register write %#x", b.seed, off)
	require.NoError(b.t, b.rtl.RegWrite(off, v), "seed %d: RTL register write %#x", b.seed, off)
}

// rtlStat reads QP n's status record from the RTL's host memory.
func (b *wcBench) rtlStat(n uint32) cs.QPStat {
	p := make([]byte, cs.QPStatSize)
	copy(p, b.win[wcStat][n*cs.QPStatSize:]) // the window's memory, even once unmapped (TestCardCosimFatal)
	return cs.QPStat(p)
}

// wantStat is the status record the RTL's rtl must equal: the model's,
// but on a QP a payload write was refused for (wf) with the RTL's RXS_CI
// when it is not behind the model's (the RTL may have taken more of the
// stream before it heard of the refusal).
func (b *wcBench) wantStat(n uint32, rtl cs.QPStat) cs.QPStat {
	ms := b.modelStat(n)
	if b.wf[n] && int32(rtl.RXSCI()-ms.RXSCI()) >= 0 {
		ms.SetRXSCI(rtl.RXSCI())
	}
	return ms
}

func (b *wcBench) modelStat(n uint32) cs.QPStat {
	p := make([]byte, cs.QPStatSize)
	b.mh.mem.Read(wcStat+uint64(n)*cs.QPStatSize, p)
	return cs.QPStat(p)
}

// newWCBench opens both cards alike and creates nqp QPs of random shapes;
// shape, if given, adjusts QP i's before it is created.
func newWCBench(t testing.TB, w int, seed uint64, cfg CardConfig, nqp int, shape ...func(i int, q *wcQP)) *wcBench {
	return newWCBenchCQ(t, w, seed, cfg, nqp, wcCQLog, shape...)
}

// newWCBenchCQ is newWCBench with CQs of 2^cqLog entries.
func newWCBenchCQ(t testing.TB, w int, seed uint64, cfg CardConfig, nqp int, cqLog uint32, shape ...func(i int, q *wcQP)) *wcBench {
	b := &wcBench{t: t, w: w, seed: seed, rng: NewRand(seed), mh: modelHost{HostMem{}}, win: map[uint64][]byte{},
		mWrite: map[wcKey][][]byte{}, rWrite: map[wcKey][][]byte{}, mAddr: map[wcKey][]uint64{}, rAddr: map[wcKey][]uint64{},
		mPlace: map[uint32][]placed{}, rPlace: map[uint32][]placed{}, ws: &Windows{}}
	t.Logf("seed %d (rerun with -cosim.seed=%d)", seed, seed)
	cfg.Width, cfg.Seed = w, seed
	cfg.Interrupt = func(v int) {
		require.Equal(t, wcVector, v, "seed %d: interrupt vector", seed)
		b.rIRQ++
	}
	cfg.Fault = func(f AXIFault) { b.faults = append(b.faults, f) }
	cfg.Mem = wcRTLMem{b}
	var err error
	b.rtl, err = NewCard(cfg)
	require.NoError(t, err)
	t.Cleanup(b.rtl.Close)
	b.model, err = cardmodel.New(cardmodel.Config{Width: w, Host: wcModelHost{b}, Observe: func(dw cardmodel.DMAWrite) {
		if !b.isRefused(dw.Addr) {
			b.record(false, dw.Addr, dw.Data)
		}
	}})
	require.NoError(t, err)

	// As host/driver/rnic opens a card: identify, reset, wait for the
	// tables, then the EQ, the status table and the interrupt moderation.
	id, err := b.rtl.RegRead(cs.ID)
	require.NoError(t, err)
	require.Equal(t, uint32(cs.VendorID|cs.DeviceID<<16), id)
	b.w32(cs.Reset, 1)
	require.NoError(t, b.rtl.RunUntil(func() bool {
		s, err := b.rtl.RegRead(cs.Status)
		require.NoError(t, err)
		return s&(1<<cs.StatusInitDoneShift) != 0
	}, 200_000), "seed %d: INIT_DONE after RESET", seed)
	b.alloc(wcEQ, 16<<wcEQLog)
	b.alloc(wcStat, 32*cs.MaxQP)
	b.w32(cs.EQBaseLo, wcEQ)
	b.w32(cs.EQBaseHi, 0)
	b.w32(cs.EQCfg, wcEQLog|wcVector<<cs.EQCfgVectorShift|1<<cs.EQCfgEnableShift)
	b.w32(cs.QpstatBaseLo, wcStat)
	b.w32(cs.QpstatBaseHi, 0)
	b.w32(cs.IRQModeration, uint32(b.rng.IntN(64)))
	for n := uint32(1); n <= wcNCQ; n++ {
		b.alloc(wcCQ+uint64(n)<<16, 32<<cqLog)
		b.w32(cs.CQNum, n)
		b.w32(cs.CQBaseLo, uint32(wcCQ+uint64(n)<<16))
		b.w32(cs.CQBaseHi, 0)
		b.w32(cs.CQCfg, cqLog)
		b.w32(cs.CQCmd, uint32(cs.CQOpCreate))
	}
	r := b.rng
	for len(b.qps) < nqp {
		n := uint32(1 + r.IntN(cs.MaxQP-1))
		dup := false
		for _, q := range b.qps {
			dup = dup || q.n == n
		}
		if dup {
			continue
		}
		q := &wcQP{n: n, pd: 1 + r.Uint32()%1000, sqLog: uint32(3 + r.IntN(4)), txsLog: uint32(12 + r.IntN(2)),
			rxsLog: uint32(12 + r.IntN(3)), mulpdu: uint32(128 + r.IntN(1400)), markersTX: r.Chance(128),
			markersRX: r.Chance(128), crc: r.Chance(160), sendCQ: uint32(1 + r.IntN(wcNCQ))}
		for _, f := range shape {
			f(len(b.qps), q)
		}
		q.peer = mpa.Framer{Markers: q.markersRX, CRC: q.crc}
		b.qps = append(b.qps, q)
		b.createQP(q, uint32(len(b.qps)))
	}
	b.w32(cs.Ctrl, 1<<cs.CtrlEnableShift)
	b.runModel()
	return b
}

// wcModelHost is the card model's host: memory plus interrupt counting.
type wcModelHost struct{ b *wcBench }

func (h wcModelHost) ReadMem(a uint64, p []byte) error {
	if h.b.isRefused(a) {
		return fmt.Errorf("%w: %#x (refused on purpose)", ErrUnmapped, a)
	}
	h.b.mh.mem.Read(a, p)
	return nil
}
func (h wcModelHost) WriteMem(a uint64, p []byte) error {
	if h.b.isRefused(a) {
		return fmt.Errorf("%w: %#x (refused on purpose)", ErrUnmapped, a)
	}
	h.b.mh.mem.Write(a, p)
	return nil
}
func (h wcModelHost) Interrupt(v int) {
	require.Equal(h.b.t, wcVector, v)
	h.b.mIRQ++
}

// createQP allocates q's rings and region, creates it and registers its
// region (an STag with remote write) through the placement window.
func (b *wcBench) createQP(q *wcQP, idx uint32) {
	b.alloc(wcSQ+uint64(q.n)<<16, cs.BB<<q.sqLog)
	b.alloc(wcTXS+uint64(q.n)<<16, 1<<q.txsLog)
	b.alloc(wcRXS+uint64(q.n)<<16, 1<<q.rxsLog)
	b.alloc(wcRegion+uint64(q.n)<<16, wcRegLen)
	m := q.mulpdu
	if q.markersTX {
		m |= 1 << cs.QPMPAMarkersTXShift
	}
	if q.markersRX {
		m |= 1 << cs.QPMPAMarkersRXShift
	}
	if q.crc {
		m |= 1 << cs.QPMPACRCShift
	}
	for _, rw := range [][2]uint32{
		{cs.QPNum, q.n}, {cs.QPPD, q.pd},
		{cs.QPSQBaseLo, uint32(wcSQ + uint64(q.n)<<16)}, {cs.QPSQBaseHi, 0},
		{cs.QPRQBaseLo, 0x7000_0000}, {cs.QPRQBaseHi, 0},
		{cs.QPTXSBaseLo, uint32(wcTXS + uint64(q.n)<<16)}, {cs.QPTXSBaseHi, 0},
		{cs.QPRXSBaseLo, uint32(wcRXS + uint64(q.n)<<16)}, {cs.QPRXSBaseHi, 0},
		{cs.QPSizes, q.sqLog | 4<<cs.QPSizesRQLogShift | q.txsLog<<cs.QPSizesTXSLogShift | q.rxsLog<<cs.QPSizesRXSLogShift},
		{cs.QPCqs, q.sendCQ | q.sendCQ<<cs.QPCqsRecvCQShift},
		{cs.QPMPA, m}, {cs.QPRD, wcORD | wcORD<<cs.QPRDIRDShift},
		{cs.QPCmd, uint32(cs.QPOpCreate)},
	} {
		b.w32(rw[0], rw[1])
	}
	key := uint8(b.rng.Uint32())
	region := wcRegion + uint64(q.n)<<16
	for _, rw := range [][2]uint32{
		{pr.StagIndex, idx},
		{pr.StagCtrl, uint32(key) | uint32(mem.RemoteWrite|mem.RemoteRead|mem.LocalWrite)<<pr.StagCtrlAccessShift | 1<<pr.StagCtrlValidShift},
		{pr.StagPd, q.pd}, {pr.StagQp, 0},
		{pr.StagBaseLo, uint32(region)}, {pr.StagBaseHi, 0},
		{pr.StagLenLo, wcRegLen}, {pr.StagLenHi, 0},
		{pr.StagAddrLo, uint32(region)}, {pr.StagAddrHi, 0},
		{pr.StagPbl, 0}, {pr.StagCommit, 0},
	} {
		b.w32(cs.PlacementWindow+rw[0], rw[1])
	}
	q.stag = mem.MakeSTag(idx, key)
	// Two gather sources of random bytes, STags 64+2*idx and 65+2*idx.
	for k := range q.src {
		key := uint8(b.rng.Uint32())
		at := wcSrc + uint64(q.n)<<16 + uint64(k)<<15
		b.alloc(at, wcSrcLen)
		p := make([]byte, wcSrcLen)
		for i := range p {
			p[i] = byte(b.rng.Uint32())
		}
		b.put(at, p)
		si := 64 + 2*idx + uint32(k)
		for _, rw := range [][2]uint32{
			{pr.StagIndex, si},
			{pr.StagCtrl, uint32(key) | uint32(mem.LocalWrite)<<pr.StagCtrlAccessShift | 1<<pr.StagCtrlValidShift},
			{pr.StagPd, q.pd}, {pr.StagQp, 0},
			{pr.StagBaseLo, uint32(at)}, {pr.StagBaseHi, 0},
			{pr.StagLenLo, wcSrcLen}, {pr.StagLenHi, 0},
			{pr.StagAddrLo, uint32(at)}, {pr.StagAddrHi, 0},
			{pr.StagPbl, 0}, {pr.StagCommit, 0},
		} {
			b.w32(cs.PlacementWindow+rw[0], rw[1])
		}
		q.src[k] = mem.MakeSTag(si, key)
	}
}

// sglWQE is a Send, Send with Invalidate or RDMA Write whose payload is
// gathered from 1 to 4 SGEs (one in ten: up to 30) of q's two sources, at
// odd offsets and lengths, empty ones too, 1,500 bytes at most in all (its
// FPDUs fit the smallest TX ring).
func (b *wcBench) sglWQE(q *wcQP) []byte {
	r := b.rng
	n := 1 + r.IntN(4)
	if r.Chance(25) {
		n = 1 + r.IntN(cs.MaxSGE)
	}
	bbs := max(1, (cs.WQEHdr+n*cs.SGESize+cs.BB-1)/cs.BB)
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	ops := []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}
	h.SetOpcode(ops[r.IntN(len(ops))])
	h.SetSignaled(r.Chance(170))
	h.SetSolicited(r.Chance(80))
	h.SetBBS(uint8(bbs))
	h.SetNSGE(uint8(n))
	h.SetWRID(r.Uint64())
	h.SetRemoteAddr(r.Uint64())
	h.SetRKey(r.Uint32())
	h.SetInvSTag(r.Uint32())
	left := 1500
	for i := 0; i < n; i++ {
		k := r.IntN(min(left, 1500/n) + 1)
		if r.Chance(30) {
			k = 0
		}
		left -= k
		src := r.IntN(2)
		off := r.IntN(wcSrcLen - k + 1)
		e := cs.SGE(wqe[cs.WQEHdr+i*cs.SGESize:])
		e.SetAddr(wcSrc + uint64(q.n)<<16 + uint64(src)<<15 + uint64(off))
		e.SetLength(uint32(k))
		e.SetLKey(uint32(q.src[src]))
	}
	return wqe
}

// post writes a random WQE (Send, Send with Invalidate, RDMA Write;
// inline or, one in three, gathered from an SGL) into q's SQ and rings
// its doorbell now, later, or as a push.
func (b *wcBench) post(q *wcQP) {
	wqe := randomInlineWQE(b.rng, wqeMix{maxLen: cs.MaxInline, signaled: 170})
	if gen.CardTxGathers(b.w) && b.rng.Chance(85) {
		wqe = b.sglWQE(q)
	}
	b.postWQE(q, wqe)
}

// postWQE writes wqe into q's SQ and rings its doorbell now, later, or
// as a push.
func (b *wcBench) postWQE(q *wcQP, wqe []byte) {
	r := b.rng
	bbs := len(wqe) / cs.BB
	size := uint16(1) << q.sqLog
	for i := 0; i < bbs; i++ {
		b.put(wcSQ+uint64(q.n)<<16+uint64((q.pi+uint16(i))&(size-1))*cs.BB, wqe[i*cs.BB:(i+1)*cs.BB])
	}
	db := cs.QPDBBase + q.n*cs.QPDBStride
	q.posted++
	if bbs == 1 && r.Chance(100) {
		b.ring(q)
		for i := 0; i < 16; i++ {
			b.w32(db+cs.QPDBPush+uint32(4*i), binary.LittleEndian.Uint32(wqe[4*i:]))
		}
		q.pi++
		return
	}
	q.pi += uint16(bbs)
	q.pending = true
	if r.Chance(150) {
		b.ring(q)
	}
}

func (b *wcBench) ring(q *wcQP) {
	if q.pending {
		q.pending = false
		b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBSQPI, uint32(q.pi))
	}
}

// peerWrites appends RDMA Writes into q's region to its receive stream
// (both memories) and announces them in one to three RXS_PI doorbells,
// the RTL stepping between them. At most the ring's size is written (the
// ring is empty at a quiet point).
func (b *wcBench) peerWrites(q *wcQP) {
	r := b.rng
	ring := uint32(1) << q.rxsLog
	var stream []byte
	for k := 1 + r.IntN(4); k > 0; k-- {
		n := 1 + r.IntN(2000)
		if r.Chance(80) {
			n = 1 + r.IntN(64)
		}
		seg := n
		if r.Chance(80) {
			seg = 1 + r.IntN(n)
		}
		saved := q.peer.Offset
		fp := b.peerWriteMsg(q, n, seg)
		if uint32(len(stream)+len(fp)) > ring {
			// This message is not sent: the stream goes on from
			// where it was.
			q.peer.Offset = saved
			break
		}
		stream = append(stream, fp...)
	}
	b.peerSend(q, stream)
}

// peerWriteMsg returns the peer's FPDUs of one RDMA Write of n random
// bytes into q's region, in segments of seg bytes.
func (b *wcBench) peerWriteMsg(q *wcQP, n, seg int) []byte {
	to := wcRegion + uint64(q.n)<<16 + uint64(b.rng.IntN(wcRegLen-n+1))
	return b.peerTaggedMsg(q, rdmap.OpWrite, to, n, seg)
}

// peerTaggedMsg returns the peer's FPDUs of one tagged message (an RDMA
// Write or a Read Response) of n random bytes at to in q's region, in
// segments of seg bytes (a zero-length one is a single last segment).
func (b *wcBench) peerTaggedMsg(q *wcQP, op rdmap.Opcode, to uint64, n, seg int) []byte {
	var fp []byte
	for off := 0; ; off += seg {
		c := min(seg, n-off)
		ulp := ddp.TaggedFields{Last: off+c == n, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, op)),
			STag: uint32(q.stag), TO: to + uint64(off)}.Append(nil)
		for i := 0; i < c; i++ {
			ulp = append(ulp, byte(b.rng.Uint32()))
		}
		var err error
		fp, err = q.peer.AppendFPDU(fp, ulp)
		require.NoError(b.t, err)
		if off+c == n {
			return fp
		}
	}
}

// peerReadRequest appends the peer's RDMA Read Request of n bytes from
// q's region (to a random sink) to stream.
func (b *wcBench) peerReadRequest(q *wcQP, stream []byte, n int) []byte {
	return b.peerReadRequestAt(q, stream, wcRegion+uint64(q.n)<<16+uint64(b.rng.IntN(wcRegLen-n+1)), n)
}

// peerReadRequestAt is peerReadRequest with the source at host address
// (TO) src.
func (b *wcBench) peerReadRequestAt(q *wcQP, stream []byte, src uint64, n int) []byte {
	r := b.rng
	if q.peerRRMSN == 0 {
		q.peerRRMSN = 1
	}
	rr := rdmap.ReadRequestFields{SinkSTag: r.Uint32(), SinkTO: r.Uint64(), Size: uint32(n), SrcSTag: uint32(q.stag), SrcTO: src}
	ulp := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadRequest)),
		QN: rdmap.QNReadRequest, MSN: q.peerRRMSN}.Append(nil)
	q.peerRRMSN++
	stream, err := q.peer.AppendFPDU(stream, rr.Append(ulp))
	require.NoError(b.t, err)
	return stream
}

// peerReads appends 1 to IRD (4) RDMA Read Requests of 0 to 1,500 bytes
// from q's region (its STag allows remote reads) to random sinks to q's
// receive stream: the card answers them with Read Responses on its
// transmit stream. Called at a quiet point with no WQE posted in the
// round, so the card model and the RTL answer them in the same place of
// the transmit stream.
func (b *wcBench) peerReads(q *wcQP) {
	r := b.rng
	var stream []byte
	for k := 1 + r.IntN(4); k > 0; k-- {
		n := r.IntN(1501)
		if r.Chance(40) {
			n = 0
		}
		stream = b.peerReadRequest(q, stream, n)
	}
	b.peerSend(q, stream)
}

// peerSend writes the peer's FPDU octets into q's receive ring (both
// memories) and announces them in one or two RXS_PI doorbells, the RTL
// stepping between them. The ring is empty at a quiet point; stream is
// not longer than the ring.
func (b *wcBench) peerSend(q *wcQP, stream []byte) {
	r := b.rng
	b.putRX(q, stream)
	cuts := []int{len(stream)}
	if len(stream) > 2 && r.Chance(128) {
		cuts = []int{1 + r.IntN(len(stream)-1), len(stream)}
	}
	for _, c := range cuts {
		v := q.rxWritten + uint32(c)
		require.NoError(b.t, b.model.Write32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, v))
		require.NoError(b.t, b.rtl.RegWrite(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, v))
		require.NoError(b.t, b.rtl.Step(r.IntN(400)))
	}
	q.rxWritten += uint32(len(stream))
}

// putRX writes stream into q's receive ring from RXS_PI on, wrapping
// at its end (RXS_PI itself is the caller's to move).
func (b *wcBench) putRX(q *wcQP, stream []byte) {
	ring := uint32(1) << q.rxsLog
	base := wcRXS + uint64(q.n)<<16
	for i := 0; i < len(stream); {
		off := (q.rxWritten + uint32(i)) & (ring - 1)
		k := min(len(stream)-i, int(ring-off))
		b.put(base+uint64(off), stream[i:i+k])
		i += k
	}
}

// runModel runs the model to idle, the host giving every transmit stream
// byte back (TXS_CI) as the status record shows it.
func (b *wcBench) runModel() {
	for {
		b.model.Run()
		moved := false
		for _, q := range b.qps {
			if pi := b.modelStat(q.n).TXSPI(); pi != q.mTXSCI {
				q.mTXSCI = pi
				require.NoError(b.t, b.model.Write32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBTXSCI, pi))
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// runRTL steps the card until it has done everything the model did: every
// QP's status record equal to the model's, no DMA outstanding, and as
// many CQEs and EQEs written; the host gives TXS_CI back as a driver does.
func (b *wcBench) runRTL(watchdog uint64) {
	start := b.rtl.Cycles()
	quiet := 0
	for {
		require.NoError(b.t, b.rtl.Step(64), "seed %d", b.seed)
		for _, f := range b.faults {
			if !b.isRefused(f.Addr) {
				b.t.Fatalf("seed %d: the card made a DMA the IOMMU refused: %+v", b.seed, f)
			}
		}
		done := true
		for _, q := range b.qps {
			st := b.rtlStat(q.n)
			if pi := st.TXSPI(); pi != q.rTXSCI {
				q.rTXSCI = pi
				require.NoError(b.t, b.rtl.RegWrite(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBTXSCI, pi), "seed %d", b.seed)
			}
			if string(st) != string(b.wantStat(q.n, st)) {
				done = false
			}
		}
		for _, k := range []string{"cqe", "eqe"} {
			for n := uint32(0); n <= wcNCQ; n++ {
				if len(b.rWrite[wcKey{k, n}]) != len(b.mWrite[wcKey{k, n}]) {
					done = false
				}
			}
		}
		if b.rtl.Outstanding() > 0 {
			done = false
		}
		if done {
			quiet++
			if quiet > 4 {
				return
			}
		} else {
			quiet = 0
		}
		if b.rtl.Cycles()-start > watchdog {
			var st []string
			for _, q := range b.qps {
				k := wcKey{"txs", q.n}
				st = append(st, fmt.Sprintf("QP %d: RTL status %x, model %x; transmit stream octets: RTL %d, model %d", q.n, []byte(b.rtlStat(q.n)), []byte(b.modelStat(q.n)),
					len(bytes.Join(b.rWrite[k], nil)), len(bytes.Join(b.mWrite[k], nil))))
			}
			for _, k := range []string{"cqe", "eqe"} {
				for n := uint32(0); n <= wcNCQ; n++ {
					if r, m := len(b.rWrite[wcKey{k, n}]), len(b.mWrite[wcKey{k, n}]); r != m {
						st = append(st, fmt.Sprintf("%s %d: the RTL wrote %d, the model %d", k, n, r, m))
						for j, l := range [][][]byte{b.rWrite[wcKey{k, n}], b.mWrite[wcKey{k, n}]} {
							for i := max(0, len(l)-6); i < len(l); i++ {
								st = append(st, fmt.Sprintf("  %s %s %d: %x", []string{"RTL", "model"}[j], k, i, l[i]))
							}
						}
					}
				}
			}
			st = append(st, fmt.Sprintf("%d DMA outstanding", b.rtl.Outstanding()))
			b.t.Fatalf("seed %d: the RTL card did not catch up with the model in %d cycles:\n%s", b.seed, watchdog, strings.Join(st, "\n"))
		}
	}
}

// compare checks every stream: transmit stream bytes per QP (and the
// rings' contents), placed bytes per QP in order, CQEs per CQ (slot by
// slot, and per QP in order), EQEs, and the status records.
func (b *wcBench) compare() {
	t, seed := b.t, b.seed
	for _, q := range b.qps {
		k := wcKey{"txs", q.n}
		mt, rt := bytes.Join(b.mWrite[k], nil), bytes.Join(b.rWrite[k], nil)
		if b.rf[q.n] && len(rt) > len(mt) {
			rt = rt[:len(mt)] // FPDUs past the refused page, never published
		}
		require.Equal(t, mt, rt, "seed %d QP %d: transmit stream bytes", seed, q.n)
		require.Zero(t, b.rewinds[0][q.n], "seed %d QP %d: the model went back on its transmit stream", seed, q.n)
		if !b.cut[q.n] && !b.rf[q.n] {
			require.Zero(t, b.rewinds[1][q.n], "seed %d QP %d: the RTL went back on its transmit stream", seed, q.n)
			// An aborted message's FPDUs past the Terminate stay in the
			// ring, unpublished: only the stream is compared then.
			ring := 1 << q.txsLog
			mr := make([]byte, ring)
			b.mh.mem.Read(wcTXS+uint64(q.n)<<16, mr)
			require.Equal(t, mr, b.win[wcTXS+uint64(q.n)<<16], "seed %d QP %d: transmit ring contents", seed, q.n)
		}
		mp, rp := b.mPlace[q.n], b.rPlace[q.n]
		if b.wf[q.n] {
			require.GreaterOrEqual(t, len(rp), len(mp), "seed %d QP %d: placed bytes (a write refused)", seed, q.n)
			rp = rp[:len(mp)]
		}
		require.Equal(t, len(mp), len(rp), "seed %d QP %d: placed bytes", seed, q.n)
		for i := range mp {
			if mp[i] != rp[i] {
				t.Fatalf("seed %d QP %d: placed byte %d: RTL %#x at %#x, model %#x at %#x", seed, q.n, i, rp[i].b, rp[i].addr, mp[i].b, mp[i].addr)
			}
		}
		rs := b.rtlStat(q.n)
		require.Equal(t, []byte(b.wantStat(q.n, rs)), []byte(rs), "seed %d QP %d: status record", seed, q.n)
		// Every status record the RTL wrote moves forward.
		var last cs.QPStat
		for i, s := range b.rWrite[wcKey{"stat", q.n}] {
			st := cs.QPStat(s)
			if last != nil {
				require.True(t, int32(st.TXSPI()-last.TXSPI()) >= 0 && int32(st.RXSCI()-last.RXSCI()) >= 0 && int16(st.SQCI()-last.SQCI()) >= 0,
					"seed %d QP %d: status record %d went back: %x after %x", seed, q.n, i, s, []byte(last))
			}
			last = st
		}
	}
	mask := func(e []byte, owner int) []byte {
		c := append([]byte(nil), e...)
		c[owner] &^= 0x80
		return c
	}
	for n := uint32(1); n <= wcNCQ; n++ {
		k := wcKey{"cqe", n}
		require.Equal(t, b.mAddr[k], b.rAddr[k], "seed %d CQ %d: CQE slots", seed, n)
		perQP := func(ws [][]byte) map[uint16][][]byte {
			m := map[uint16][][]byte{}
			for _, e := range ws {
				require.Len(t, e, cs.CQESize, "seed %d CQ %d: a CQE write", seed, n)
				m[cs.CQE(e).QPN()] = append(m[cs.CQE(e).QPN()], mask(e, 31))
			}
			return m
		}
		require.Equal(t, perQP(b.mWrite[k]), perQP(b.rWrite[k]), "seed %d CQ %d: CQEs per QP", seed, n)
		for i, e := range b.rWrite[k] {
			require.Equal(t, b.mWrite[k][i][31]&0x80, e[31]&0x80, "seed %d CQ %d CQE %d: owner bit", seed, n, i)
		}
	}
	k := wcKey{"eqe", 0}
	require.Equal(t, b.mAddr[k], b.rAddr[k], "seed %d: EQE slots", seed)
	count := func(ws [][]byte) map[string]int {
		m := map[string]int{}
		for _, e := range ws {
			m[fmt.Sprintf("%x", mask(e, 15))]++
		}
		return m
	}
	require.Equal(t, count(b.mWrite[k]), count(b.rWrite[k]), "seed %d: EQEs", seed)
	for _, f := range b.faults {
		require.True(t, b.isRefused(f.Addr), "seed %d: DMA fault %+v", seed, f)
	}
}

// arm arms a random CQ (the next completion writes CQ_NOTIFY) and the EQ
// (the next event raises the vector) on both cards, at a quiet point.
func (b *wcBench) arm() {
	r := b.rng
	if r.Chance(128) {
		n := uint32(1 + r.IntN(wcNCQ))
		ci := uint32(len(b.mWrite[wcKey{"cqe", n}]))
		b.w32(cs.CQDBBase+n*cs.CQDBStride+cs.CQDBCI, ci|1<<cs.CQDBCIArmShift)
	}
	if r.Chance(160) {
		b.w32(cs.EQDB, uint32(len(b.mWrite[wcKey{"eqe", 0}]))|1<<cs.EQDBArmShift)
	}
}

// armStream arms q's stream notifications at random (STREAM.ARM_TX: a
// TX_DATA event once the card writes transmit stream bytes past TXS_CI;
// ARM_RX: an RX_SPACE event once it consumes receive stream bytes). An
// arm that finds nothing stays until it does, on both cards.
func (b *wcBench) armStream(q *wcQP) {
	var v uint32
	if b.rng.Chance(100) {
		v |= 1 << cs.QPDBStreamArmTXShift
	}
	if b.rng.Chance(100) {
		v |= 1 << cs.QPDBStreamArmRXShift
	}
	if v != 0 {
		b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBStream, v)
	}
}

// qpCmd gives QP_CMD op for q to both cards at a quiet point, runs them,
// and checks the state and TX_CLOSED of the RTL's status record.
func (b *wcBench) qpCmd(q *wcQP, op cs.QPOp, state cs.QPState) {
	b.w32(cs.QPNum, q.n)
	b.w32(cs.QPCmd, uint32(op))
	b.runModel()
	b.runRTL(3_000_000)
	st := b.rtlStat(q.n)
	require.Equal(b.t, state, st.State(), "seed %d QP %d: state after %v", b.seed, q.n, op)
	require.True(b.t, st.TXClosed(), "seed %d QP %d: TX_CLOSED after %v", b.seed, q.n, op)
}

// ends ends the four QPs' lives the four ways a host or peer does, at a
// quiet point: QP_CMD CLOSE (CLOSED, TX_CLOSED, QP_CLOSED, then ERROR:
// QP_ERROR), STREAM.RX_FIN (STREAM_END), STREAM.RX_LOST (QP_ERROR
// LLP_LOST, ERROR, TX_CLOSED) and QP_CMD ERROR (QP_ERROR, ERROR,
// TX_CLOSED; a second ERROR does nothing); then DESTROY frees them.
func (b *wcBench) ends() {
	require.Len(b.t, b.qps, 4)
	b.qpCmd(b.qps[0], cs.QPOpClose, cs.QPStateClosed)
	for i, bit := range []int{cs.QPDBStreamRXFinShift, cs.QPDBStreamRXLostShift} {
		b.w32(cs.QPDBBase+b.qps[1+i].n*cs.QPDBStride+cs.QPDBStream, 1<<bit)
	}
	b.qpCmd(b.qps[2], cs.QPOpError, cs.QPStateError) // RX_LOST did it: this ERROR does nothing more
	b.qpCmd(b.qps[0], cs.QPOpError, cs.QPStateError)
	b.qpCmd(b.qps[3], cs.QPOpError, cs.QPStateError)
	b.qpCmd(b.qps[3], cs.QPOpError, cs.QPStateError)
	for _, q := range []*wcQP{b.qps[0], b.qps[2], b.qps[3]} {
		b.w32(cs.QPNum, q.n)
		b.w32(cs.QPCmd, uint32(cs.QPOpDestroy))
	}
	b.runModel()
	b.runRTL(3_000_000)
}

// round posts work on every QP (inline WQEs, peer RDMA Writes on the
// receive stream; or, in one round of five, only the peer's RDMA Read
// Requests), arms a CQ and the EQ at random, runs both cards until
// the RTL has done what the model did, and checks the interrupts.
func (b *wcBench) round(round int) {
	r := b.rng
	b.arm()
	mIRQ, rIRQ := b.mIRQ, b.rIRQ
	for _, q := range b.qps {
		b.armStream(q)
		if r.Chance(50) {
			b.peerReads(q)
			continue
		}
		for k := r.IntN(5); k > 0; k-- {
			st := b.rtlStat(q.n)
			if int(uint16(1)<<q.sqLog)-int(q.pi-st.SQCI()) < cs.MaxWQEBBs {
				break
			}
			if len(q.reads) < wcORD && r.Chance(40) {
				b.postReadWQE(q)
				continue
			}
			b.post(q)
		}
		b.ring(q)
		if r.Chance(170) {
			b.peerWrites(q)
		}
	}
	b.runModel()
	b.runRTL(3_000_000)
	// The peer answers the RDMA Reads the QPs sent (each went out: at
	// most ORD were posted), and the Reads complete.
	for b.answerReads() {
		b.runModel()
		b.runRTL(3_000_000)
	}
	require.Equal(b.t, b.mIRQ-mIRQ, b.rIRQ-rIRQ, "seed %d round %d: interrupts", b.seed, round)
}

// wcORD is the ORD (and IRD) every QP of the bench is created with.
const wcORD = 4

// postReadWQE posts an RDMA Read of 0 to 1,000 bytes into a random
// place of q's region (signaled or not, fenced now and then; one in
// eight zero-length with no SGE) and keeps it for the peer to answer.
func (b *wcBench) postReadWQE(q *wcQP) {
	r := b.rng
	n := r.IntN(1001)
	rd := wcRead{to: wcRegion + uint64(q.n)<<16 + uint64(r.IntN(wcRegLen-n+1)), n: n}
	signaled := r.Chance(170)
	fence := r.Chance(40)
	h := b.readWQE(signaled, fence)
	if n > 0 || !r.Chance(32) {
		setReadSink(h, rd.to, n, q.stag)
	} else {
		rd = wcRead{} // no sink: the card model's Read sinks are zero
	}
	rd.fenced = fence && len(q.reads) > 0
	b.postWQE(q, h)
	q.reads = append(q.reads, rd)
}

// readWQE is a one-block RDMA Read WQE, signaled and fenced as asked,
// with a random WR_ID and source (REMOTE_ADDR, RKEY) and no sink yet.
func (b *wcBench) readWQE(signaled, fence bool) cs.WQE {
	h := cs.WQE(make([]byte, cs.BB))
	h.SetOpcode(cs.WQEOpcodeRDMARead)
	h.SetSignaled(signaled)
	h.SetFence(fence)
	h.SetBBS(1)
	h.SetWRID(b.rng.Uint64())
	h.SetRemoteAddr(b.rng.Uint64())
	h.SetRKey(b.rng.Uint32())
	return h
}

// setReadSink gives Read WQE h its sink: one SGE of n bytes at to in
// lkey's region.
func setReadSink(h cs.WQE, to uint64, n int, lkey mem.STag) {
	h.SetNSGE(1)
	e := cs.SGE(h[cs.WQEHdr:])
	e.SetAddr(to)
	e.SetLength(uint32(n))
	e.SetLKey(uint32(lkey))
}

// answerReads has the peer answer, in order, the Reads each QP sent:
// Read Responses in random segments into the Reads' sinks, as many as
// its receive ring holds, up to a fenced Read that has not gone out yet
// (it goes once those before it are answered: a later call answers it).
// It reports whether any Read was answered.
func (b *wcBench) answerReads() bool {
	r := b.rng
	any := false
	for _, q := range b.qps {
		ring := uint32(1) << q.rxsLog
		var stream []byte
		for k := 0; len(q.reads) > 0 && (k == 0 || !q.reads[0].fenced); k++ {
			rd := q.reads[0]
			seg := max(rd.n, 1)
			if r.Chance(128) { // up to 8 segments: one Read's answer always fits the ring
				seg = max(1+r.IntN(seg), (rd.n+7)/8)
			}
			saved := q.peer.Offset
			fp := b.peerTaggedMsg(q, rdmap.OpReadResponse, rd.to, rd.n, seg)
			if uint32(len(stream)+len(fp)) > ring {
				q.peer.Offset = saved // the next round's
				break
			}
			stream = append(stream, fp...)
			q.reads = q.reads[1:]
		}
		if len(stream) > 0 {
			b.peerSend(q, stream)
			any = true
		}
	}
	return any
}

// wcTiming is the host of the whole-card co-simulation: reads answered
// after 1 to 300 cycles, write responses after 1 to 200, reordered and
// interleaved across IDs, every ready and response withheld one cycle in
// five, irq_ready too.
var wcTiming = CardConfig{Timing: AXITiming{ReadLatency: 1, ReadJitter: 300, WriteLatency: 1, WriteJitter: 200, Reorder: true, Ready: 200},
	IRQBackpressure: 50}

// TestCardCosim programs the whole card and the card model alike and
// runs random inline Sends, Sends with Invalidate, RDMA Writes and RDMA
// Reads (answered by the peer in random segments) on transmit (pushed
// and fetched), RDMA Writes from the peer on receive,
// RDMA Read Requests from the peer answered with Read Responses,
// CQ and EQ arming, under random DMA latency (1 to 300 cycles), response
// order and backpressure; every stream must be the model's.
func TestCardCosim(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			rounds := 40
			if w == 512 {
				rounds = 20
			}
			b := newWCBench(t, w, seed, wcTiming, 4)
			for round := 0; round < rounds; round++ {
				b.round(round)
			}
			b.ends()
			b.compare()
			if w == 64 {
				b.mutations()
			}
			var cqes, reads, eqes, placedBytes, txBytes int
			for n := uint32(1); n <= wcNCQ; n++ {
				cqes += len(b.rWrite[wcKey{"cqe", n}])
				for _, e := range b.rWrite[wcKey{"cqe", n}] {
					if c := cs.CQE(e); c.Opcode() == cs.WCOpcodeRDMARead && c.Status() == cs.WCStatusSuccess {
						reads++
					}
				}
			}
			eqes = len(b.rWrite[wcKey{"eqe", 0}])
			for _, q := range b.qps {
				placedBytes += len(b.rPlace[q.n])
				txBytes += len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
			}
			require.Greater(t, cqes, 10, "seed %d", seed)
			require.Greater(t, placedBytes, 0, "seed %d", seed)
			require.Greater(t, reads, 0, "seed %d: RDMA Reads completed", seed)
			st := b.rtl.Stats()
			t.Logf("seed %d: %d cycles, %d CQEs (%d of RDMA Reads), %d EQEs, %d interrupts, %d transmit stream bytes, %d placed bytes, %d read / %d write bursts",
				seed, st.Cycles, cqes, reads, eqes, st.Interrupts, txBytes, placedBytes, st.ReadBursts, st.WriteBursts)
		})
	}
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCardCosim measures the whole-card co-simulation's speed with
// its checks (the AXI checks every cycle, the card model beside it, every
// stream compared): the workload of TestCardCosim, round after round,
// until b.N cycles have run.
func BenchmarkCardCosim(b *testing.B) {
	for _, w := range gen.CardTopWidths {
		b.Run(fmt.Sprint(w), func(b *testing.B) {
			// Seed 1 at 512 bits meets the card_tx stall of hw/README.md
			// (iwcard, known defects) after 200,000 cycles; the benchmark
			// measures speed, so it runs a seed that does not.
			seed := map[int]uint64{64: 1, 512: 2}[w]
			if *cosimSeed != 0 {
				seed = *cosimSeed
			}
			wb := newWCBench(b, w, seed, wcTiming, 4)
			start := wb.rtl.Cycles()
			b.ResetTimer()
			t0, c0 := time.Now(), cpuTime()
			for round := 0; wb.rtl.Cycles()-start < uint64(b.N); round++ {
				wb.round(round)
			}
			el, cpu := time.Since(t0), cpuTime()-c0
			b.StopTimer()
			wb.compare()
			n := wb.rtl.Cycles() - start
			b.ReportMetric(float64(n)/el.Seconds(), "cycles/s")
			// The same per second of this process's CPU time: what a
			// core gives the co-simulation whatever else runs.
			b.ReportMetric(float64(n)/cpu.Seconds(), "cycles/cpu-s")
		})
	}
}

// catchT records a failure instead of ending the test.
type catchT struct {
	testing.TB
	msg string
}

func (c *catchT) Helper() {}
func (c *catchT) Errorf(format string, a ...any) {
	if c.msg == "" {
		c.msg = fmt.Sprintf(format, a...)
	}
}
func (c *catchT) Fatalf(format string, a ...any) { c.Errorf(format, a...); panic(c) }
func (c *catchT) FailNow()                       { panic(c) }

// mutations shows compare failing on a wrong transmit stream byte, a wrong
// placed byte, a CQE with another WR_ID and a status record behind.
func (b *wcBench) mutations() {
	t := b.t
	try := func(what string, mutate, undo func()) {
		c := &catchT{TB: t}
		mutate()
		func() {
			defer func() {
				if r := recover(); r != nil && r != any(c) {
					panic(r)
				}
			}()
			b.t = c
			b.compare()
		}()
		b.t = t
		undo()
		require.NotEmpty(t, c.msg, "seed %d: compare did not catch %s", b.seed, what)
	}
	q := b.qps[0]
	for _, q2 := range b.qps {
		if len(b.rWrite[wcKey{"txs", q2.n}]) > 0 && len(b.rPlace[q2.n]) > 0 {
			q = q2
		}
	}
	tx := b.rWrite[wcKey{"txs", q.n}]
	require.NotEmpty(t, tx)
	try("a transmit stream byte", func() { tx[0][0] ^= 1 }, func() { tx[0][0] ^= 1 })
	pl := b.rPlace[q.n]
	require.NotEmpty(t, pl)
	try("a placed byte", func() { pl[len(pl)-1].b ^= 0x80 }, func() { pl[len(pl)-1].b ^= 0x80 })
	for n := uint32(1); n <= wcNCQ; n++ {
		if cq := b.rWrite[wcKey{"cqe", n}]; len(cq) > 0 {
			try("a CQE's WR_ID", func() { cq[0][3] ^= 4 }, func() { cq[0][3] ^= 4 })
		}
	}
	st := b.win[wcStat][q.n*cs.QPStatSize:]
	try("a status record", func() { st[8]-- }, func() { st[8]++ })
}

// inlineSend is a one-block signaled inline Send WQE of n (zero) bytes.
func inlineSend(wrID uint64, n int) []byte { return inlineWQE(cs.WQEOpcodeSend, wrID, n, 1) }

// inlineWQE is a signaled inline WQE of n bytes in bbs blocks: a Send,
// or an RDMA Write to STag 0x100 at 0.
func inlineWQE(op cs.WQEOpcode, wrID uint64, n, bbs int) []byte {
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	h.SetOpcode(op)
	h.SetSignaled(true)
	h.SetInline(true)
	h.SetBBS(uint8(bbs))
	h.SetInlineLen(uint16(n))
	h.SetWRID(wrID)
	if op == cs.WQEOpcodeRDMAWrite {
		h.SetRKey(0x100)
	}
	return wqe
}

// oneSGEWrite is a one-block RDMA Write WQE of the n bytes at addr under
// lkey, to remote at rkey.
func oneSGEWrite(signaled bool, wrID, remote uint64, rkey uint32, addr uint64, n, lkey uint32) []byte {
	wqe := make([]byte, cs.BB)
	h := cs.WQE(wqe)
	h.SetOpcode(cs.WQEOpcodeRDMAWrite)
	h.SetSignaled(signaled)
	h.SetBBS(1)
	h.SetNSGE(1)
	h.SetWRID(wrID)
	h.SetRemoteAddr(remote)
	h.SetRKey(rkey)
	e := cs.SGE(wqe[cs.WQEHdr:])
	e.SetAddr(addr)
	e.SetLength(n)
	e.SetLKey(lkey)
	return wqe
}

// TestCardFault: a DMA outside the mapped windows is refused by the
// simulated IOMMU and reported, and the card does not stop: a signaled
// WQE whose CQ was unmapped gets its CQE write refused, which
// DMA_FAULT_ADDR and DMA_FAULT_INFO name (the CQE's address and QP, a
// write, SLVERR, one fault), and its QP goes to error with its CQ
// (TestCardCosimCQEFault compares that with the card model).
func TestCardFault(t *testing.T) {
	seed := seedFor(t.Name())
	b := newWCBench(t, 64, seed, wcTiming, 2)
	q := b.qps[0]
	cq := wcCQ + uint64(q.sendCQ)<<16
	require.NoError(t, b.ws.Unmap(cq))
	wqe := inlineSend(0, 8)
	b.put(wcSQ+uint64(q.n)<<16+uint64(q.pi&(1<<q.sqLog-1))*cs.BB, wqe)
	q.pi++
	require.NoError(t, b.rtl.RegWrite(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBSQPI, uint32(q.pi)))
	require.NoError(t, b.rtl.RunUntil(func() bool { return len(b.faults) > 0 }, 200_000), "seed %d: no fault reported", seed)
	f := b.faults[0]
	require.True(t, f.Write, "seed %d: %+v", seed, f)
	require.Equal(t, cq, f.Addr&^0xffff, "seed %d: %+v", seed, f)
	require.ErrorIs(t, f.Err, ErrUnmapped)
	require.NoError(t, b.rtl.Step(2000))
	require.EqualValues(t, 1, b.rtlStat(q.n).SQCI(), "seed %d: the WQE was still sent", seed)
	r := faultRegs(t, b.rtl.RegRead)
	require.Zero(t, r[0]>>cs.StatusFatalShift&1, "seed %d: a CQE's fault stopped the card", seed)
	require.Equal(t, f.Addr, uint64(r[2])<<32|uint64(r[1]), "seed %d: DMA_FAULT_ADDR", seed)
	info := uint32(q.n) | 2<<cs.DMAFaultInfoRespShift | 1<<cs.DMAFaultInfoWriteShift | 1<<cs.DMAFaultInfoCountShift
	require.Equal(t, info, r[3], "seed %d: DMA_FAULT_INFO", seed)
	require.NoError(t, b.rtl.RunUntil(func() bool { return b.rtlStat(q.n).State() == cs.QPStateError }, 200_000), "seed %d: the QP on the CQ in error", seed)
}

// BenchmarkCardLatency measures, on an idle card, the cycles from a pushed
// 32-byte inline Send's doorbell (the BAR0 write of its last push word
// answered) to its transmit stream bytes in host memory (the last beat
// of the ring write taken) and to its CQE in host memory; reads are
// answered 250 cycles after their address (1 µs at 250 MHz), write
// responses 20 cycles after the last beat, every channel ready.
func BenchmarkCardLatency(b *testing.B) {
	for _, w := range gen.CardTopWidths {
		b.Run(fmt.Sprint(w), func(b *testing.B) {
			wb := newWCBench(b, w, 1, CardConfig{Timing: AXITiming{ReadLatency: 250, WriteLatency: 20}}, 1)
			q := wb.qps[0]
			var txAt, cqeAt uint64
			wb.onRTLWrite = func(k wcKey) {
				switch {
				case k.kind == "txs" && txAt == 0:
					txAt = wb.rtl.Cycles()
				case k.kind == "cqe" && cqeAt == 0:
					cqeAt = wb.rtl.Cycles()
				}
			}
			var tx, cqe uint64
			db := cs.QPDBBase + q.n*cs.QPDBStride
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				wqe := inlineSend(uint64(i), cs.PushInline)
				wb.put(wcSQ+uint64(q.n)<<16+uint64(q.pi&(1<<q.sqLog-1))*cs.BB, wqe)
				for k := 0; k < 16; k++ {
					require.NoError(b, wb.rtl.RegWrite(db+cs.QPDBPush+uint32(4*k), binary.LittleEndian.Uint32(wqe[4*k:])))
				}
				q.pi++
				start := wb.rtl.Cycles()
				txAt, cqeAt = 0, 0
				require.NoError(b, wb.rtl.RunUntil(func() bool { return cqeAt != 0 }, 100_000))
				tx += txAt - start
				cqe += cqeAt - start
				require.NoError(b, wb.rtl.RunUntil(func() bool { return wb.rtl.Outstanding() == 0 }, 100_000))
				pi := wb.rtlStat(q.n).TXSPI()
				require.NoError(b, wb.rtl.RegWrite(db+cs.QPDBTXSCI, pi))
				require.NoError(b, wb.rtl.Step(50))
			}
			b.ReportMetric(float64(tx)/float64(b.N), "cycles-to-ring")
			b.ReportMetric(float64(cqe)/float64(b.N), "cycles-to-CQE")
		})
	}
}

// BenchmarkCardTightCQ measures what card_tx's hold on a tight CQ (at
// most gen.CardCQTight entries free) costs: the RTL cycles per WQE of
// bursts of 16 signaled 64-byte inline Sends on one QP, its CQ of 16
// entries (always tight) or of 1024 (never, the host consuming every
// burst's CQEs), reads answered after 250 cycles and write responses
// after 20.
func BenchmarkCardTightCQ(b *testing.B) {
	const burst = 16
	for _, w := range gen.CardTopWidths {
		for _, cqLog := range []uint32{4, 10} {
			b.Run(fmt.Sprintf("%d/cq%d", w, 1<<cqLog), func(b *testing.B) {
				wb := newWCBenchCQ(b, w, 1, CardConfig{Timing: AXITiming{ReadLatency: 250, WriteLatency: 20}}, 1, cqLog,
					func(_ int, q *wcQP) { q.sqLog, q.txsLog, q.sendCQ = 6, 13, 1 })
				q := wb.qps[0]
				cqes := 0
				wb.onRTLWrite = func(k wcKey) {
					if k.kind == "cqe" {
						cqes++
					}
				}
				db := cs.QPDBBase + q.n*cs.QPDBStride
				var cycles uint64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for k := 0; k < burst; k++ {
						wqe := inlineSend(uint64(k), cs.PushInline)
						wb.put(wcSQ+uint64(q.n)<<16+uint64(q.pi&(1<<q.sqLog-1))*cs.BB, wqe)
						q.pi++
					}
					start, want := wb.rtl.Cycles(), cqes+burst
					require.NoError(b, wb.rtl.RegWrite(db+cs.QPDBSQPI, uint32(q.pi)))
					require.NoError(b, wb.rtl.RunUntil(func() bool { return cqes == want }, 1_000_000))
					cycles += wb.rtl.Cycles() - start
					require.NoError(b, wb.rtl.RunUntil(func() bool { return wb.rtl.Outstanding() == 0 }, 100_000))
					require.NoError(b, wb.rtl.RegWrite(cs.CQDBBase+1*cs.CQDBStride+cs.CQDBCI, uint32(cqes)))
					require.NoError(b, wb.rtl.RegWrite(db+cs.QPDBTXSCI, wb.rtlStat(q.n).TXSPI()))
					require.NoError(b, wb.rtl.Step(50))
				}
				b.ReportMetric(float64(cycles)/float64(b.N*burst), "cycles/WQE")
			})
		}
	}
}
