package sim

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

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

// placed is one placed byte: what both sides must write, in order per QP.
type placed struct {
	addr uint64
	b    byte
}

// rxQP is one QP of the receive co-simulation.
type rxQP struct {
	n, pd      uint32
	rxs        uint64
	rxsLog     uint32
	markers    bool
	crc        bool
	region     uint64 // its 64 KiB target region
	stag       mem.STag
	stream     []byte // the FPDU octets the peer sent
	written    uint32 // octets written into the ring and announced (RXS_PI)
	rtlCI      uint32
	want, got  []placed
	regionSize uint64
	framer     mpa.Framer // the peer's, at the stream's end
	stop       uint32     // if not 0, the stream is fed up to here only

	snd        rxSendQP // the untagged (Send) side
	rd         rxReadQP // its Read Requests
	modelTXSCI uint32   // TXS_CI given back to the model
}

type wbeat struct {
	data []byte
	strb uint64
}

type axiBurst struct {
	id, addr uint64
	beats    int
	sent     int
	due      uint64
}

// rxTrace, if set, is where a debugging run writes its VCD (from the
// --trace build of card_rx_tb).
var rxTrace = ""

// rxCosim drives card_rx_tb (card_rx + placement + place_axi) and the card
// model with the same QPs, STags, ring contents and doorbells, and compares
// every placed byte per QP.
type rxCosim struct {
	t      testing.TB
	w      int
	rng    Rand
	l      Layout
	inst   *Instance
	in     []uint32
	out    []uint32
	p      map[string]Port
	cycle  uint64
	model  *cardmodel.Card
	mhost  modelHost
	rtlMem HostMem
	qps    []*rxQP
	byAddr func(a uint64) *rxQP

	// AXI slaves: the ring reads (m_axi_ar/r), the RQ WQE reads
	// (m_axi_rq_ar/r), and the payload writes (m_axi_aw/w/b: placement's
	// and the Sends', told apart by address).
	rd         [2]axiRdSlave
	wr         axiWrSlave
	maxLat     int
	readyP     int
	record     bool   // keep every placed byte for the comparison
	fixed      bool   // every read answered maxLat cycles after its address, in order, and every ready high
	lastR      uint64 // cycle of the last read beat
	lastW      uint64 // cycle of the last write beat
	beats      uint64
	errSeen    bool
	invs       []uint32 // STag indices card_rx invalidated
	modelInvs  []uint32 // ... and those the Sends with Invalidate name
	cplRdy     int      // m_cpl_ready probability (of 256)
	sndBytes   uint64   // Send payload bytes card_rx wrote
	dones      []rreqDone
	holdDones  bool // Read Request records' IRD entries are not given back
	allowTerm  bool // m_rxterm records are expected: kept in terms
	allowBadDB bool // bad RQ_PI doorbells are expected: m_baddb taken, its QPs kept in badDB
	badDB      []uint32
	terms      []uint64          // m_rxterm causes
	modelTerms []uint64          // the model's TERM_SENT causes
	modelCI    map[uint32]uint32 // the model's latest RXS_CI per QP (its status records)
}

type axiRdSlave struct {
	pre string
	q   []*axiBurst
}

type axiWrSlave struct {
	awq []uint64
	wq  []wbeat
	bq  []uint64
}

func (c *rxCosim) port(name string) Port {
	if p, ok := c.p[name]; ok {
		return p
	}
	p, err := c.l.In(name)
	if err != nil {
		p, err = c.l.Out(name)
	}
	require.NoError(c.t, err, name)
	c.p[name] = p
	return p
}

func (c *rxCosim) set(name string, v uint64) { c.port(name).Set(c.in, v) }
func (c *rxCosim) get(name string) uint64    { return c.port(name).Get(c.out) }

// step runs one cycle with the inputs set so far, then serves the AXI
// slaves from what the RTL showed.
func (c *rxCosim) step() {
	c.serveBefore()
	require.NoError(c.t, c.inst.Run(c.in, c.out))
	c.cycle++
	c.serveAfter()
}

func (c *rxCosim) latency() uint64 {
	if c.fixed {
		return uint64(c.maxLat)
	}
	return uint64(c.rng.IntN(c.maxLat + 1))
}

func (c *rxCosim) serveBefore() {
	r := c.rng
	if c.fixed {
		c.readyP = 256
	}
	for _, p := range []string{"m_axi_arready", "m_axi_rq_arready", "m_axi_awready", "m_axi_wready", "m_ci_ready"} {
		c.set(p, b2u(r.Chance(c.readyP)))
	}
	c.set("m_cpl_ready", b2u(c.fixed || r.Chance(c.cplRdy)))
	c.set("m_err_ready", 1)
	c.set("m_baddb_ready", b2u(c.allowBadDB))
	c.set("m_term_ready", 1)
	c.set("m_rdone_ready", 1)
	c.set("m_rxterm_ready", 1)
	for i := range c.rd {
		c.serveRead(&c.rd[i])
	}
	c.serveReadBefore()
	c.set("m_axi_bvalid", 0)
	if len(c.wr.bq) > 0 && c.wr.bq[0] <= c.cycle {
		c.set("m_axi_bvalid", 1)
		c.set("m_axi_bresp", 0)
	}
}

// serveRead puts one beat of a random burst whose latency has passed on
// the slave's R channel.
func (c *rxCosim) serveRead(s *axiRdSlave) {
	r := c.rng
	c.set(s.pre+"rvalid", 0)
	var ready []*axiBurst
	for _, b := range s.q {
		if b.due <= c.cycle {
			ready = append(ready, b)
		}
	}
	if len(ready) == 0 || !(c.fixed || r.Chance(240)) {
		return
	}
	b := ready[0]
	if !c.fixed {
		b = ready[r.IntN(len(ready))]
	}
	if s.pre == "m_axi_" {
		c.lastR = c.cycle
	}
	L := uint64(c.w / 8)
	beat := make([]byte, L)
	c.rtlMem.Read(b.addr+uint64(b.sent)*L, beat)
	c.set(s.pre+"rvalid", 1)
	c.set(s.pre+"rid", b.id)
	c.set(s.pre+"rresp", 0)
	c.set(s.pre+"rlast", b2u(b.sent == b.beats-1))
	c.port(s.pre+"rdata").SetBytes(c.in, beat)
	b.sent++
	if b.sent == b.beats {
		for i, x := range s.q {
			if x == b {
				s.q = append(s.q[:i], s.q[i+1:]...)
				break
			}
		}
	}
}

func (c *rxCosim) serveAfter() {
	for i := range c.rd {
		s := &c.rd[i]
		p := s.pre
		if c.get(p+"arvalid") == 1 && c.port(p+"arready").Get(c.in) == 1 {
			s.q = append(s.q, &axiBurst{id: c.get(p + "arid"), addr: c.get(p + "araddr"), beats: int(c.get(p+"arlen")) + 1,
				due: c.cycle + c.latency()})
		}
	}
	c.serveWrite(&c.wr)
	if c.get("m_ci_valid") == 1 && c.port("m_ci_ready").Get(c.in) == 1 {
		n := uint32(c.get("m_ci_qp"))
		for _, q := range c.qps {
			if q.n == n {
				q.rtlCI = uint32(c.get("m_ci_value"))
			}
		}
	}
	if c.get("m_cpl_valid") == 1 && c.port("m_cpl_ready").Get(c.in) == 1 {
		c.takeCompletion()
	}
	if c.get("mon_inv") == 1 {
		c.invs = append(c.invs, uint32(c.get("mon_inv_index")))
	}
	c.beats += c.get("mon_ulp_beat")
	c.serveReadAfter()
	if c.allowTerm && c.get("m_rxterm_valid") == 1 {
		c.terms = append(c.terms, c.get("m_rxterm_cause"))
		require.Zero(c.t, c.get("m_err_valid")|c.get("m_term_valid"), "cycle %d: an error record", c.cycle)
		return
	}
	// The harness posts within each RQ's size and never moves RQ_PI back
	// (but in TestCardRxBadRQDoorbell): a bad RQ_PI here is the check's
	// false alarm.
	if c.allowBadDB && c.get("m_baddb_valid") == 1 {
		c.badDB = append(c.badDB, uint32(c.get("m_baddb_qpn")))
	}
	require.True(c.t, c.allowBadDB || c.get("m_baddb_valid") == 0, "cycle %d: a bad RQ_PI doorbell reported, QP %d", c.cycle, c.get("m_baddb_qpn"))
	if c.get("m_err_valid") == 1 || c.get("m_term_valid") == 1 || c.get("m_rxterm_valid") == 1 {
		c.errSeen = true
	}
	require.False(c.t, c.errSeen, "cycle %d: an error record (err kind %d, term cause %#x, rxterm cause %#x QP %d)", c.cycle,
		c.get("m_err_kind"), c.get("m_term_cause"), c.get("m_rxterm_cause"), c.get("m_rxterm_qp"))
}

// serveWrite takes AW and W beats (W may come first, as AXI allows),
// records the bytes each write places and schedules its response.
func (c *rxCosim) serveWrite(s *axiWrSlave) {
	p := "m_axi_"
	if c.get(p+"awvalid") == 1 && c.port(p+"awready").Get(c.in) == 1 {
		require.Zero(c.t, c.get(p+"awlen"), "place_axi writes one beat per burst")
		s.awq = append(s.awq, c.get(p+"awaddr"))
	}
	if c.get(p+"wvalid") == 1 && c.port(p+"wready").Get(c.in) == 1 {
		data := make([]byte, c.w/8)
		c.port(p+"wdata").Bytes(c.out, data)
		s.wq = append(s.wq, wbeat{data, c.get(p + "wstrb")})
		c.lastW = c.cycle
	}
	for len(s.awq) > 0 && len(s.wq) > 0 {
		a, wb := s.awq[0], s.wq[0]
		s.awq, s.wq = s.awq[1:], s.wq[1:]
		q := c.byAddr(a)
		require.NotNil(c.t, q, "cycle %d: a write at %#x outside every region", c.cycle, a)
		snd := q.snd.inRecv(a)
		for i := range wb.data {
			if wb.strb>>i&1 == 0 {
				continue
			}
			if snd {
				c.sndBytes++
			}
			if c.record {
				pb := placed{a + uint64(i), wb.data[i]}
				if snd {
					q.snd.got = append(q.snd.got, pb)
				} else {
					q.got = append(q.got, pb)
				}
			}
			c.rtlMem.Write(a+uint64(i), wb.data[i:i+1])
		}
		s.bq = append(s.bq, c.cycle+c.latency())
	}
	if c.port(p+"bvalid").Get(c.in) == 1 && c.get(p+"bready") == 1 {
		s.bq = s.bq[1:]
	}
}

func (c *rxCosim) modelW(off, v uint32) {
	require.NoError(c.t, c.model.Write32(off, v), "model Write32(%#x)", off)
}

// regWrite writes a placement register on both sides.
func (c *rxCosim) regWrite(off, v uint32) {
	c.modelW(cs.PlacementWindow+off, v)
	c.set("reg_wr_valid", 1)
	c.set("reg_wr_addr", uint64(off))
	c.set("reg_wr_data", uint64(v))
	c.step()
	c.set("reg_wr_valid", 0)
}

func (c *rxCosim) createQP(q *rxQP) {
	c.modelW(cs.QPNum, q.n)
	c.modelW(cs.QPPD, q.pd)
	c.modelW(cs.QPRXSBaseLo, uint32(q.rxs))
	c.modelW(cs.QPRXSBaseHi, uint32(q.rxs>>32))
	for _, o := range []uint32{cs.QPSQBaseLo, cs.QPTXSBaseLo} {
		c.modelW(o, 0x1000_0000)
	}
	c.modelW(cs.QPRQBaseLo, uint32(q.snd.rqBase))
	c.modelW(cs.QPRQBaseHi, uint32(q.snd.rqBase>>32))
	c.modelW(cs.QPSizes, 4|q.snd.rqLog<<8|12<<16|q.rxsLog<<24)
	c.modelW(cs.QPCqs, 1|1<<16)
	m := uint32(1448)
	if q.markers {
		m |= 1 << cs.QPMPAMarkersRXShift
	}
	if q.crc {
		m |= 1 << cs.QPMPACRCShift
	}
	c.modelW(cs.QPMPA, m)
	c.modelW(cs.QPRD, 4|rxIRD<<8)
	c.modelW(cs.QPCmd, uint32(cs.QPOpCreate))
	c.set("qp_num_qpn", uint64(q.n))
	c.set("qp_pd_pd", uint64(q.pd))
	c.set("qp_rxs_base_lo", q.rxs&0xffffffff)
	c.set("qp_rxs_base_hi", q.rxs>>32)
	c.set("qp_sizes_rxs_log", uint64(q.rxsLog))
	c.set("qp_mpa_markers_rx", b2u(q.markers))
	c.set("qp_mpa_crc", b2u(q.crc))
	c.set("qp_mpa_rev0", 0)
	c.set("qp_rq_base_lo", q.snd.rqBase&0xffffffff)
	c.set("qp_rq_base_hi", q.snd.rqBase>>32)
	c.set("qp_sizes_rq_log", uint64(q.snd.rqLog))
	c.set("qp_cqs_recv_cq", 1)
	c.set("qp_rd_ird", rxIRD)
	c.set("qp_cmd_op", uint64(cs.QPOpCreate))
	c.handshake("qp_cmd", fmt.Sprintf("QP %d's CREATE", q.n))
}

// handshake raises name_valid (the payload set) and steps until the RTL
// takes it (name_ready high in a cycle), then lowers it.
func (c *rxCosim) handshake(name, what string) {
	c.set(name+"_valid", 1)
	for start := c.cycle; ; {
		require.Less(c.t, c.cycle-start, uint64(rxHandshakeLimit), "watchdog: %s not taken", what)
		c.step()
		if c.get(name+"_ready") == 1 {
			break
		}
	}
	c.set(name+"_valid", 0)
}

// rxHandshakeLimit bounds a wait for a command or doorbell to be taken.
const rxHandshakeLimit = 10_000_000

// doorbell announces RXS_PI to both sides.
func (c *rxCosim) doorbell(q *rxQP) {
	c.modelW(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, q.written)
	c.runModel()
	c.doorbellRTL(q)
}

// doorbellRTL announces RXS_PI to the RTL.
func (c *rxCosim) doorbellRTL(q *rxQP) { c.qpDoorbellRTL("RXS_PI", q.n, q.written) }

// qpDoorbellRTL gives card_rx QP n's doorbell reg (a QP_DB field) with
// value v, stepping until it is taken.
func (c *rxCosim) qpDoorbellRTL(reg string, n, v uint32) {
	kind, err := gen.CardDBKind("QP_DB", reg)
	require.NoError(c.t, err)
	c.set("s_db_kind", kind)
	c.set("s_db_index", uint64(n))
	c.set("s_db_value", uint64(v))
	c.handshake("s_db", fmt.Sprintf("QP %d's %s doorbell", n, reg))
}

// rdmaWrites builds the FPDU stream of RDMA Writes into q's region:
// single-segment messages of 1 to 4096 octets (a quarter under 65).
func rdmaWrites(r Rand, q *rxQP, total int) {
	for len(q.stream) < total {
		n := 1 + r.IntN(4096)
		if r.Chance(64) {
			n = 1 + r.IntN(64)
		}
		// An FPDU the ring cannot hold whole is never taken (the model
		// ends the QP): the largest leaves room for the headers, CRC,
		// pad and markers in the smallest ring.
		n = min(n, 1<<q.rxsLog-128)
		rdmaWrite(r, q, n, n)
	}
}

// rdmaWrite appends an RDMA Write of n octets, in DDP segments of at most
// seg octets of payload, to q's stream.
func rdmaWrite(r Rand, q *rxQP, n, seg int) {
	to := q.region + uint64(r.IntN(int(q.regionSize)-n+1))
	for off := 0; off < n; off += seg {
		k := min(seg, n-off)
		ulp := ddp.TaggedFields{Last: off+k == n, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)), STag: uint32(q.stag), TO: to + uint64(off)}.Append(nil)
		for i := 0; i < k; i++ {
			ulp = append(ulp, byte(r.Uint32()))
		}
		var err error
		q.stream, err = q.framer.AppendFPDU(q.stream, ulp)
		if err != nil {
			panic(err)
		}
	}
}

func newRxCosim(t testing.TB, w int, seed uint64, nq int, tweak func(*rxQP)) *rxCosim {
	m, err := gen.CardRxBench(w)
	require.NoError(t, err)
	lib, err := Load(LibPath(m.Name, rxTrace != ""))
	require.NoError(t, err)
	l := LayoutOf(m)
	c := &rxCosim{t: t, w: w, rng: NewRand(seed), l: l, inst: lib.New(), p: map[string]Port{},
		mhost: modelHost{mem: HostMem{}}, rtlMem: HostMem{}, modelCI: map[uint32]uint32{}, maxLat: 250, readyP: 200, record: true, cplRdy: 200,
		rd: [2]axiRdSlave{{pre: "m_axi_"}, {pre: "m_axi_rq_"}}}
	t.Cleanup(c.inst.Close)
	if rxTrace != "" {
		require.NoError(t, c.inst.TraceOpen(rxTrace))
		t.Cleanup(c.inst.TraceClose)
	}
	c.in = make([]uint32, l.InWords)
	c.out = make([]uint32, l.OutWords)
	c.model, err = cardmodel.New(cardmodel.Config{Width: w, Host: c.mhost, Observe: func(dw cardmodel.DMAWrite) {
		switch dw.Kind {
		case cardmodel.WriteCQE:
			c.modelCompletion(dw)
			return
		case cardmodel.WriteEQE:
			c.modelEvent(dw)
			return
		case cardmodel.WriteStatus:
			c.modelCI[dw.QPN] = cs.QPStat(dw.Data).RXSCI()
			return
		case cardmodel.WritePayload:
		default:
			return
		}
		q := c.byAddr(dw.Addr)
		require.NotNil(t, q)
		if c.record {
			for i, b := range dw.Data {
				pb := placed{dw.Addr + uint64(i), b}
				if q.snd.inRecv(dw.Addr) {
					q.snd.want = append(q.snd.want, pb)
				} else {
					q.want = append(q.want, pb)
				}
			}
		}
	}})
	require.NoError(t, err)
	c.set("rst", 1)
	for i := 0; i < 4; i++ {
		c.step()
	}
	c.set("rst", 0)
	for c.get("init_done") == 0 {
		c.step()
	}
	// Card model: EQ, status table, one CQ, enabled.
	c.modelW(cs.EQBaseLo, 0x2000_0000)
	c.modelW(cs.EQCfg, 10|1<<cs.EQCfgEnableShift)
	c.modelW(cs.QpstatBaseLo, 0x2100_0000)
	c.modelW(cs.CQNum, 1)
	c.modelW(cs.CQBaseLo, 0x2200_0000)
	c.modelW(cs.CQCfg, 16)
	c.modelW(cs.CQCmd, uint32(cs.CQOpCreate))
	c.modelW(cs.Ctrl, 1)
	r := c.rng
	for i := 0; i < nq; i++ {
		q := &rxQP{n: uint32(1 + r.IntN(cs.MaxQP-1)), pd: 1 + r.Uint32()%1000, rxsLog: uint32(12 + r.IntN(5)),
			markers: r.Chance(128), crc: r.Chance(128), regionSize: 1 << 16}
		dup := false
		for _, o := range c.qps {
			dup = dup || o.n == q.n
		}
		if dup {
			i--
			continue
		}
		if tweak != nil {
			tweak(q)
		}
		q.rxs = 0x4000_0000 + uint64(i)<<25
		q.region = 0x8000_0000 + uint64(i)<<20
		q.snd.init(r, i)
		q.framer = mpa.Framer{Markers: q.markers, CRC: q.crc}
		c.qps = append(c.qps, q)
	}
	c.byAddr = func(a uint64) *rxQP {
		for _, q := range c.qps {
			if a >= q.region && a < q.region+q.regionSize || q.snd.inRecv(a) {
				return q
			}
		}
		return nil
	}
	for i, q := range c.qps {
		c.createQP(q)
		idx := uint32(1 + i)
		key := uint8(r.Uint32())
		for _, rw := range [][2]uint32{
			{pr.StagIndex, idx},
			{pr.StagCtrl, uint32(key) | uint32(mem.RemoteWrite|mem.RemoteRead|mem.LocalWrite)<<pr.StagCtrlAccessShift | 1<<pr.StagCtrlValidShift},
			{pr.StagPd, q.pd}, {pr.StagQp, 0},
			{pr.StagBaseLo, uint32(q.region)}, {pr.StagBaseHi, uint32(q.region >> 32)},
			{pr.StagLenLo, uint32(q.regionSize)}, {pr.StagLenHi, 0},
			{pr.StagAddrLo, uint32(q.region)}, {pr.StagAddrHi, uint32(q.region >> 32)},
			{pr.StagPbl, 0}, {pr.StagCommit, 0},
		} {
			c.regWrite(rw[0], rw[1])
		}
		q.stag = mem.MakeSTag(idx, key)
		c.registerRecv(q, uint32(len(c.qps)+1+i*(1+rxInvSTags)))
	}
	return c
}

// feed writes the next chunk of q's stream into both rings (where the RTL
// has freed room) and rings the doorbell; false when nothing could go.
func (c *rxCosim) feed(q *rxQP, max int) bool {
	size := uint32(1) << q.rxsLog
	room := size - (q.written - q.rtlCI)
	end := uint32(len(q.stream))
	if q.stop != 0 {
		end = q.stop
	}
	left := q.rd.limit(q.snd.limit(end)) - q.written
	n := min(room, left, uint32(1+c.rng.IntN(max)))
	if n == 0 {
		return false
	}
	for k := uint32(0); k < n; {
		pos := (q.written + k) & (size - 1)
		m := min(n-k, size-pos)
		b := q.stream[q.written+k : q.written+k+m]
		c.mhost.mem.Write(q.rxs+uint64(pos), b)
		c.rtlMem.Write(q.rxs+uint64(pos), b)
		k += m
	}
	q.written += n
	c.doorbell(q)
	return true
}

func (c *rxCosim) finish(limit uint64) {
	for start := c.cycle; ; {
		done := true
		for _, q := range c.qps {
			done = done && q.rtlCI == uint32(len(q.stream)) && len(q.got) >= len(q.want) &&
				len(q.snd.got) >= len(q.snd.want) && len(q.snd.cplGot) >= len(q.snd.cplWant)
		}
		done = done && len(c.wr.bq) == 0 && len(c.wr.awq) == 0 && len(c.wr.wq) == 0
		if done {
			break
		}
		require.Less(c.t, c.cycle-start, limit, "watchdog: the RTL stopped consuming (CI per QP vs stream length: %v)", c.progress())
		c.step()
	}
	for i := 0; i < 300; i++ { // nothing more may come
		c.step()
	}
	for _, q := range c.qps {
		comparePlaced(c.t, q.n, "RDMA Write", q.want, q.got)
		comparePlaced(c.t, q.n, "Send", q.snd.want, q.snd.got)
		require.Equal(c.t, q.snd.cplWant, q.snd.cplGot, "QP %d: receive completions", q.n)
	}
	slices.Sort(c.invs)
	slices.Sort(c.modelInvs)
	require.Equal(c.t, c.modelInvs, c.invs, "STag indices invalidated")
}

// drive feeds every QP's stream into its ring in random chunks (posting
// the receives its Sends need first), QPs in random order with random
// pauses, then finishes (limit: the watchdog's cycles).
func (c *rxCosim) drive(limit uint64) {
	// The watchdog: feeding waits on RXS_CI when a ring is full, so the
	// RTL must move some QP's RXS_CI within limit cycles.
	moved, lastCI := c.cycle, uint64(0)
	for busy := true; busy; {
		var ci uint64
		for _, q := range c.qps {
			ci += uint64(q.rtlCI)
		}
		if ci != lastCI {
			moved, lastCI = c.cycle, ci
		}
		require.Less(c.t, c.cycle-moved, limit, "watchdog: the RTL stopped consuming while the rings were being fed: %s", c.progress())
		busy = false
		for _, i := range c.rng.Perm(len(c.qps)) {
			q := c.qps[i]
			c.postRecv(q)
			if c.feed(q, 3000) {
				busy = true
			}
			for k := c.rng.IntN(300); k > 0; k-- {
				c.step()
			}
		}
		if !busy {
			for _, q := range c.qps {
				busy = busy || q.written < uint32(len(q.stream))
			}
			c.step()
		}
	}
	c.finish(limit)
}

func (c *rxCosim) progress() string {
	var b bytes.Buffer
	for _, q := range c.qps {
		fmt.Fprintf(&b, "QP %d: RXS_CI %d (model %d), %d of %d stream bytes written, Send bytes %d/%d, completions %d/%d; ", q.n, q.rtlCI, c.modelCI[q.n], q.written, len(q.stream),
			len(q.snd.got), len(q.snd.want), len(q.snd.cplGot), len(q.snd.cplWant))
	}
	return b.String()
}

// The receive engine, with placement beside it, places every RDMA Write
// exactly as the card model does, per QP, byte for byte and in order:
// random QPs (markers and CRC on or off, rings of 4 to 64 KiB that wrap),
// FPDU streams of 1 to 4096-octet payloads written into the rings at
// arbitrary boundaries, reads answered after 0 to 250 cycles in random
// order and interleaved, random AXI backpressure.
func TestCardRxCosim(t *testing.T) {
	for _, w := range gen.CardRxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			t.Logf("seed %d", seed)
			c := newRxCosim(t, w, seed, 4, nil)
			for _, q := range c.qps {
				rdmaWrites(c.rng, q, 40000)
			}
			c.drive(200_000)
			t.Logf("%d cycles, %d ULPDU beats", c.cycle, c.beats)
		})
	}
}

// BenchmarkCardRxThroughput measures the receive engine (with placement
// and place_axi) on one QP receiving 4 KiB (EMSS 1460) and 64 KiB RDMA
// Writes in MULPDU-sized FPDUs (EMSS 1460 and 8960), markers and CRC on,
// every ring read answered 250 cycles after its address, every channel
// ready, the ring kept up to 1 MiB ahead of RXS_CI: ULPDU beats per
// cycle into placement and ring (wire) beats per cycle, from the first
// ULPDU beat on.
func BenchmarkCardRxThroughput(b *testing.B) {
	for _, w := range gen.CardRxWidths {
		for _, tc := range []struct{ emss, size int }{{1460, 4 << 10}, {1460, 64 << 10}, {8960, 64 << 10}} {
			emss, size := tc.emss, tc.size
			b.Run(fmt.Sprintf("w%d/emss%d/%dKiB", w, emss, size>>10), func(b *testing.B) {
				cycles := uint64(200_000)
				c := newRxCosim(b, w, 1, 1, func(q *rxQP) { q.markers, q.crc, q.rxsLog, q.regionSize = true, true, 24, 1<<16 })
				c.fixed, c.record = true, false
				q := c.qps[0]
				mul := mpa.MULPDU(emss, true)
				seg := mul - 14
				for len(q.stream) < int(cycles)*w/8*2 {
					rdmaWrite(c.rng, q, size, seg)
				}
				b.ResetTimer()
				var start, beats uint64
				var ci0 uint32
				for c.cycle < cycles*2 && (start == 0 || c.cycle-start < cycles) {
					if q.written-q.rtlCI < 1<<20 && q.written < uint32(len(q.stream)) {
						q.written = min(q.written+64<<10, uint32(len(q.stream)))
						size := uint32(1) << q.rxsLog
						lo := q.written - min(64<<10, q.written)
						for a := lo; a < q.written; {
							pos := a & (size - 1)
							k := min(q.written-a, size-pos)
							c.rtlMem.Write(q.rxs+uint64(pos), q.stream[a:a+k])
							a += k
						}
						c.doorbellRTL(q)
					}
					c.step()
					if start == 0 && c.get("mon_ulp_beat") == 1 {
						start, ci0 = c.cycle, q.rtlCI
					}
					if start != 0 {
						beats += c.get("mon_ulp_beat")
					}
				}
				n := float64(c.cycle - start)
				b.ReportMetric(float64(beats)/n, "ulp_beats/cycle")
				b.ReportMetric(float64(q.rtlCI-ci0)/float64(w/8)/n, "wire_beats/cycle")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// BenchmarkCardRxMessageRate measures the receive engine's message rate:
// 64 QPs, each receiving a stream of 64-byte RDMA Writes (one FPDU each,
// markers and CRC on) in a 64 KiB ring refilled whenever it is half
// empty, every ring read answered 250 cycles after its address, every
// channel ready: cycles per message, counted from the FPDUs whose octets
// RXS_CI has passed.
func BenchmarkCardRxMessageRate(b *testing.B) {
	for _, w := range gen.CardRxWidths {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			const cycles = 100_000
			c := newRxCosim(b, w, 1, 64, func(q *rxQP) { q.markers, q.crc, q.rxsLog = true, true, 16 })
			c.fixed, c.record = true, false
			ends := map[*rxQP][]uint32{}
			for _, q := range c.qps {
				for len(q.stream) < cycles*w/8 {
					rdmaWrite(c.rng, q, 64, 64)
					ends[q] = append(ends[q], uint32(len(q.stream)))
				}
			}
			done := func() (n int) {
				for _, q := range c.qps {
					i, _ := slices.BinarySearch(ends[q], q.rtlCI+1) // FPDUs ending at or before RXS_CI
					n += i
				}
				return n
			}
			b.ResetTimer()
			var start uint64
			var n0 int
			for c.cycle < 4*cycles && (start == 0 || c.cycle-start < cycles) {
				for _, q := range c.qps {
					size := uint32(1) << q.rxsLog
					if q.written-q.rtlCI <= size/2 && q.written < uint32(len(q.stream)) {
						n := min(size-(q.written-q.rtlCI), uint32(len(q.stream))-q.written)
						for k := uint32(0); k < n; {
							pos := (q.written + k) & (size - 1)
							m := min(n-k, size-pos)
							c.rtlMem.Write(q.rxs+uint64(pos), q.stream[q.written+k:q.written+k+m])
							k += m
						}
						q.written += n
						c.doorbellRTL(q)
					}
				}
				c.step()
				if start == 0 && c.get("mon_ulp_beat") == 1 {
					start, n0 = c.cycle, done()
				}
			}
			msgs := done() - n0
			require.Positive(b, msgs, "no message was taken")
			b.ReportMetric(float64(c.cycle-start)/float64(msgs), "cycles/msg")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkCardRxLatency measures, for single 64-octet RDMA Writes (one
// FPDU, markers and CRC on) on an idle engine, the cycles from the ring
// read beat holding the FPDU's last octet to the last AXI write beat of its
// payload.
func BenchmarkCardRxLatency(b *testing.B) {
	for _, w := range gen.CardRxWidths {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			c := newRxCosim(b, w, 1, 1, func(q *rxQP) { q.markers, q.crc = true, true })
			c.fixed, c.maxLat = true, 20
			q := c.qps[0]
			var sum, worst uint64
			const n = 32
			for i := 0; i < n; i++ {
				rdmaWrite(c.rng, q, 64, 64)
				c.feed(q, 1<<20)
				c.finish(100_000)
				d := c.lastW - c.lastR
				sum += d
				worst = max(worst, d)
			}
			b.ReportMetric(float64(sum)/n, "cycles")
			b.ReportMetric(float64(worst), "max_cycles")
			b.ReportMetric(0, "ns/op")
		})
	}
}
