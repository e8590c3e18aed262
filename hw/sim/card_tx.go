package sim

import (
	"errors"
	"fmt"
	"io"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// HostMem is sparse host memory in 4 KiB pages (zero where never written).
type HostMem map[uint64]*[4096]byte

// Write copies p to addr.
func (h HostMem) Write(addr uint64, p []byte) {
	for len(p) > 0 {
		pg := h[addr>>12]
		if pg == nil {
			pg = new([4096]byte)
			h[addr>>12] = pg
		}
		k := copy(pg[addr&4095:], p)
		addr += uint64(k)
		p = p[k:]
	}
}

// Read fills p from addr.
func (h HostMem) Read(addr uint64, p []byte) {
	for len(p) > 0 {
		k := min(len(p), int(4096-addr&4095))
		if pg := h[addr>>12]; pg != nil {
			copy(p[:k], pg[addr&4095:])
		} else {
			clear(p[:k])
		}
		addr += uint64(k)
		p = p[k:]
	}
}

// CardTxQP is a QP command as card_tx takes it: the QP_OP (0 is taken
// as CREATE) and, for CREATE, the staged context.
type CardTxQP struct {
	Op              uint32
	Num             uint32
	SQBase, TXSBase uint64
	SQLog, TXSLog   uint32
	MULPDU          uint32
	Markers, CRC    bool
	Rev0            bool
	SendCQ          uint32
	ORD             uint32 // RDMA Reads outstanding (1..16; 0 is taken as 1)
	PD              uint32 // protection domain (lkey checks)
}

// CardTxDoorbell is one doorbell record for card_tx.
type CardTxDoorbell struct {
	Kind  uint32 // DB_KIND
	QPN   uint32
	Value uint32
	Push  *[64]byte // QP_DB_PUSH with the whole block
}

// CardTxReadDone is a Read done record (placement's m_done) for card_tx.
type CardTxReadDone struct {
	QPN, STag uint32
	TO        uint64
	Len       uint16 // the last Read Response segment's ULPDU length
}

// CardTxReadRequest is a Read Request record for card_tx's responder
// (card_rx's m_rreq): checked by the receive side already.
type CardTxReadRequest struct {
	QPN, SinkSTag uint32
	SinkTO        uint64
	Size, SrcSTag uint32
	SrcTO         uint64
	Hdr           [18]byte // the request's DDP header
}

// CardTxRecord is one record card_tx gave out on m_cpl.
type CardTxRecord struct {
	CQE     bool
	CQ, QPN uint32
	WRID    uint64
	Opcode  uint8
	Status  uint8
	ByteLen uint32
	SQCI    uint16
	TXSPI   uint32
	Cycle   uint64 // the cycle it was taken in
}

// RingWrite is a run of bytes card_tx wrote by DMA.
type RingWrite struct {
	Addr uint64
	Data []byte
}

// CardTxTiming is the simulated host's behaviour.
type CardTxTiming struct {
	// ReadLatency is the cycles from a read burst's address to its first
	// beat: fixed when ReadJitter is 0, else ReadLatency + [0, ReadJitter).
	ReadLatency, ReadJitter int
	// Random: random AXI readiness, random interleaving of read bursts of
	// different IDs, random write response latency, random m_cpl_ready.
	Random bool
	// Vectors, if not nil, gets every cycle's inputs and the RTL's
	// outputs, reset included, in the format of the GHDL test bench
	// (Bench.RunGHDL): the Verilated card_tx_tb becomes the reference its
	// VHDL is run against. Flush it with FlushVectors.
	Vectors io.Writer
}

type ctxPorts struct {
	rst                                                          Port
	qpValid, qpReady, qpOp, qpNum, qpSQBase, qpSQLog, qpTXSBase  Port
	qpTXSLog, qpMULPDU, qpMarkers, qpCRC, qpRev0, qpSendCQ       Port
	qpORD, rdnValid, rdnReady, rdnQP, rdnSTag, rdnTO, rdnLen     Port
	dbValid, dbReady, dbKind, dbIndex, dbValue, dbPushOK, dbPush Port
	cplValid, cplReady, cplCQE, cplCQ, cplQPN, cplWRID, cplOp    Port
	cplStatus, cplLen, cplSQCI, cplTXSPI, halt, haltQPN, dmaErr  Port
	arID, arAddr, arLen, arValid, arReady                        Port
	rID, rData, rResp, rLast, rValid, rReady                     Port
	awAddr, awLen, awValid, awReady                              Port
	wData, wStrb, wLast, wValid, wReady                          Port
	bID, bResp, bValid, bReady                                   Port
	qpPD, regWr, regAddr, regData, initDone                      Port
	plReady                                                      []Port
	rrValid, rrReady, rrQPN, rrSinkSTag, rrSinkTO, rrSize        Port
	rrSrcSTag, rrSrcTO, rrHdr, rrdValid, rrdReady, rrdQPN        Port
	endValid, endReady, endQPN, endLost                          Port
}

func lookupCardTxPorts(l Layout) (ctxPorts, error) {
	var p ctxPorts
	err := lookup(l, map[string]*Port{
		"rst": &p.rst, "s_qp_valid": &p.qpValid, "s_qp_op": &p.qpOp, "s_qp_num": &p.qpNum,
		"s_qp_sq_base": &p.qpSQBase, "s_qp_sq_log": &p.qpSQLog, "s_qp_txs_base": &p.qpTXSBase,
		"s_qp_txs_log": &p.qpTXSLog, "s_qp_mulpdu": &p.qpMULPDU, "s_qp_markers": &p.qpMarkers,
		"s_qp_crc": &p.qpCRC, "s_qp_rev0": &p.qpRev0, "s_qp_send_cq": &p.qpSendCQ, "s_qp_ord": &p.qpORD,
		"s_rdone_valid": &p.rdnValid, "s_rdone_qp": &p.rdnQP, "s_rdone_stag": &p.rdnSTag, "s_rdone_to": &p.rdnTO,
		"s_rdone_len":  &p.rdnLen,
		"s_rreq_valid": &p.rrValid, "s_rreq_qpn": &p.rrQPN, "s_rreq_sink_stag": &p.rrSinkSTag, "s_rreq_sink_to": &p.rrSinkTO,
		"s_rreq_size": &p.rrSize, "s_rreq_src_stag": &p.rrSrcSTag, "s_rreq_src_to": &p.rrSrcTO, "s_rreq_hdr": &p.rrHdr,
		"m_rreq_done_ready": &p.rrdReady,
		"s_end_valid":       &p.endValid, "s_end_qpn": &p.endQPN, "s_end_lost": &p.endLost,
		"s_db_valid": &p.dbValid, "s_db_kind": &p.dbKind, "s_db_index": &p.dbIndex, "s_db_value": &p.dbValue,
		"s_db_push_ok": &p.dbPushOK, "s_db_push_data": &p.dbPush, "m_cpl_ready": &p.cplReady,
		"s_qp_pd": &p.qpPD, "reg_wr_valid": &p.regWr, "reg_wr_addr": &p.regAddr, "reg_wr_data": &p.regData,
		"m_axi_arready": &p.arReady, "m_axi_rid": &p.rID, "m_axi_rdata": &p.rData, "m_axi_rresp": &p.rResp,
		"m_axi_rlast": &p.rLast, "m_axi_rvalid": &p.rValid, "m_axi_awready": &p.awReady,
		"m_axi_wready": &p.wReady, "m_axi_bid": &p.bID, "m_axi_bresp": &p.bResp, "m_axi_bvalid": &p.bValid,
	}, map[string]*Port{
		"s_qp_ready": &p.qpReady, "s_rdone_ready": &p.rdnReady, "s_db_ready": &p.dbReady, "m_cpl_valid": &p.cplValid, "m_cpl_cqe": &p.cplCQE,
		"m_cpl_cq": &p.cplCQ, "m_cpl_qpn": &p.cplQPN, "m_cpl_wr_id": &p.cplWRID, "m_cpl_opcode": &p.cplOp,
		"m_cpl_status": &p.cplStatus, "m_cpl_byte_len": &p.cplLen, "m_cpl_sq_ci": &p.cplSQCI,
		"m_cpl_txs_pi": &p.cplTXSPI, "stat_halt": &p.halt, "stat_halt_qpn": &p.haltQPN, "stat_dma_err": &p.dmaErr,
		"m_axi_arid": &p.arID, "m_axi_araddr": &p.arAddr, "m_axi_arlen": &p.arLen, "m_axi_arvalid": &p.arValid,
		"m_axi_rready": &p.rReady, "m_axi_awaddr": &p.awAddr, "m_axi_awlen": &p.awLen, "m_axi_awvalid": &p.awValid,
		"m_axi_wdata": &p.wData, "m_axi_wstrb": &p.wStrb, "m_axi_wlast": &p.wLast, "m_axi_wvalid": &p.wValid,
		"m_axi_bready": &p.bReady, "init_done": &p.initDone,
		"s_rreq_ready": &p.rrReady, "m_rreq_done_valid": &p.rrdValid, "m_rreq_done_qpn": &p.rrdQPN,
		"s_end_ready": &p.endReady,
	})
	if err != nil {
		return p, err
	}
	// placement's own channels carry nothing in card_tx_tb, and card_tx's
	// TERM_SENT events (card_cq's in the card) are taken at once: always
	// ready.
	for _, n := range []string{"m_dma_ready", "m_host_tready", "m_term_ready", "m_done_ready", "m_ev_ready"} {
		q, err := l.In(n)
		if err != nil {
			return p, err
		}
		p.plReady = append(p.plReady, q)
	}
	return p, nil
}

type ctxReadBurst struct {
	id, addr uint64
	beats    int
	sent     int
	readyAt  uint64
}

type ctxWriteBurst struct {
	addr    uint64
	beats   int
	got     int
	readyAt uint64
}

// CardTxSim runs card_tx_tb_w<width> cycle by cycle against a simulated host:
// memory behind its AXI4 master (reads answered after a latency, bursts of
// different IDs interleaved at random; writes recorded), QP commands and
// doorbells fed in order, records collected.
type CardTxSim struct {
	Mem     HostMem
	Timing  CardTxTiming
	Records []CardTxRecord
	// Writes are the DMA writes in the order their bursts' data arrived,
	// one per burst.
	Writes []RingWrite
	// HoldRecords holds m_cpl_ready low: completion records wait in
	// card_tx's queue (the host's completion path is busy).
	HoldRecords bool
	// Cycles counted since New.
	Cycles uint64
	// FirstBeat is the cycle of each write burst's first W beat.
	FirstBeat []uint64
	// ReadBeats and WriteBeats count data beats.
	ReadBeats, WriteBeats uint64
	// DoorbellTaken is the cycle each doorbell was taken in.
	DoorbellTaken []uint64
	// ReadDoneTaken is the cycle each Read done was taken in.
	ReadDoneTaken []uint64
	// RReqDone lists the QP of each m_rreq_done taken, in order.
	RReqDone []uint32
	// RingBytes counts, per QP, the stream bytes whose write data reached
	// host memory (a host may hand them to TCP and give TXS_CI back).
	RingBytes map[uint32]uint64

	lanes   int
	inst    *Instance
	p       ctxPorts
	in, out []uint32
	vec     *vectorRecorder // Timing.Vectors
	rng     Rand
	cmds    []CardTxQP
	dbs     []CardTxDoorbell
	dones   []CardTxReadDone
	ends    []CardTxEnd
	// endAfter is, per queued stream end, the Read dones queued before
	// it; doneQueued and doneTaken count Read dones queued and taken.
	endAfter              []int
	doneQueued, doneTaken int
	rreqs                 []CardTxReadRequest
	regs                  [][2]uint32         // placement register writes (offset, value), after init_done
	rings                 map[uint32]CardTxQP // by QP number
	rd                    []*ctxReadBurst
	wr                    []*ctxWriteBurst // addressed, data not complete
	bq                    []*ctxWriteBurst // response pending
	lastB                 uint64
	cur                   []byte
}

// ErrCardTx is wrapped by the errors of a card_tx co-simulation.
var ErrCardTx = errors.New("sim: card_tx")

// NewCardTxSim loads card_tx_tb_w<width> (card_tx with placement behind
// its lkey check port; built by make hw-sim-libs).
func NewCardTxSim(width int, seed uint64, t CardTxTiming) (*CardTxSim, error) {
	m, err := gen.CardTxBench(width)
	if err != nil {
		return nil, err
	}
	l := LayoutOf(m)
	lib, err := loadFor(m.Name, l)
	if err != nil {
		return nil, err
	}
	p, err := lookupCardTxPorts(l)
	if err != nil {
		return nil, err
	}
	s := &CardTxSim{Mem: HostMem{}, Timing: t, lanes: width / 8, inst: lib.New(), p: p, RingBytes: map[uint32]uint64{}, rings: map[uint32]CardTxQP{},
		in: make([]uint32, l.InWords), out: make([]uint32, l.OutWords), rng: NewRand(seed)}
	if t.Vectors != nil {
		s.vec = newVectorRecorder(t.Vectors, l)
	}
	p.rst.Set(s.in, 1)
	for i := 0; i < 4; i++ {
		if err := s.run(s.in); err != nil {
			return nil, err
		}
	}
	p.rst.Set(s.in, 0)
	for _, q := range p.plReady {
		q.Set(s.in, 1)
	}
	return s, nil
}

// Close frees the simulation.
func (s *CardTxSim) Close() { s.inst.Close() }

// run clocks the RTL once with inputs in, and records the cycle if asked.
func (s *CardTxSim) run(in []uint32) error {
	if err := s.inst.Run(in, s.out); err != nil {
		return err
	}
	return s.vec.record(in, s.out)
}

// FlushVectors writes out the cycles recorded for Timing.Vectors.
func (s *CardTxSim) FlushVectors() error {
	return s.vec.flush()
}

// Command queues the QP command q (a CREATE's rings are watched for
// RingBytes).
func (s *CardTxSim) Command(q CardTxQP) {
	s.cmds = append(s.cmds, q)
	if q.Op <= 1 {
		s.rings[q.Num] = q
		s.RingBytes[q.Num] = 0
	}
}

// RegWrite queues a write of placement's register window (the STag
// table, docs/regmap.md); the writes go in one per cycle once placement's
// table sweep is done.
func (s *CardTxSim) RegWrite(off, v uint32) { s.regs = append(s.regs, [2]uint32{off, v}) }

// Doorbell queues a doorbell.
func (s *CardTxSim) Doorbell(d CardTxDoorbell) { s.dbs = append(s.dbs, d) }

// ReadDone queues a Read done record.
func (s *CardTxSim) ReadDone(d CardTxReadDone) {
	s.dones = append(s.dones, d)
	s.doneQueued++
}

// RecordOut reports whether a record waits on m_cpl (a Read Response's
// m_rreq_done may be taken before its record).
func (s *CardTxSim) RecordOut() bool { return s.p.cplValid.Get(s.out) != 0 }

// CardTxEnd is card_stat's stream-end record (m_end) for card_tx.
type CardTxEnd struct {
	QPN  uint32
	Lost bool // RX_LOST (else the stream ended)
}

// StreamEnd queues a stream-end record; it is offered after every Read
// done queued before it has been taken (the top's ordering).
func (s *CardTxSim) StreamEnd(e CardTxEnd) {
	s.ends = append(s.ends, e)
	s.endAfter = append(s.endAfter, s.doneQueued)
}

// ReadRequest queues a Read Request record for the responder.
func (s *CardTxSim) ReadRequest(r CardTxReadRequest) { s.rreqs = append(s.rreqs, r) }

// Pending reports whether commands, doorbells, Read dones, Read Request
// records or register writes wait to be taken.
func (s *CardTxSim) Pending() bool {
	return len(s.cmds)+len(s.dbs)+len(s.dones)+len(s.rreqs)+len(s.regs)+len(s.ends) > 0
}

// Halted reports stat_halt and stat_dma_err.
func (s *CardTxSim) Halted() (halt bool, qpn uint32, dmaErr bool) {
	return s.p.halt.Get(s.out) != 0, uint32(s.p.haltQPN.Get(s.out)), s.p.dmaErr.Get(s.out) != 0
}

func (s *CardTxSim) chance(p int) bool { return !s.Timing.Random || s.rng.Chance(p) }

// Step runs one cycle.
func (s *CardTxSim) Step() error {
	p, in, L := &s.p, s.in, s.lanes
	s.Cycles++
	// QP command and doorbell.
	if len(s.cmds) > 0 && s.chance(200) {
		q := s.cmds[0]
		p.qpValid.Set(in, 1)
		p.qpOp.Set(in, uint64(max(q.Op, 1)))
		p.qpNum.Set(in, uint64(q.Num))
		p.qpSQBase.Set(in, q.SQBase)
		p.qpSQLog.Set(in, uint64(q.SQLog))
		p.qpTXSBase.Set(in, q.TXSBase)
		p.qpTXSLog.Set(in, uint64(q.TXSLog))
		p.qpMULPDU.Set(in, uint64(q.MULPDU))
		p.qpMarkers.Set(in, b2u(q.Markers))
		p.qpCRC.Set(in, b2u(q.CRC))
		p.qpRev0.Set(in, b2u(q.Rev0))
		p.qpSendCQ.Set(in, uint64(q.SendCQ))
		p.qpORD.Set(in, uint64(max(q.ORD, 1)))
		p.qpPD.Set(in, uint64(q.PD))
	} else {
		p.qpValid.Set(in, 0)
	}
	// Commands, doorbells and Read dones reach the card in the order the
	// test queued them across kinds only for commands: a doorbell never
	// overtakes a QP command queued before it (card_regs keeps BAR0 order).
	if len(s.cmds) == 0 && len(s.dones) > 0 && s.chance(200) {
		d := s.dones[0]
		p.rdnValid.Set(in, 1)
		p.rdnQP.Set(in, uint64(d.QPN))
		p.rdnSTag.Set(in, uint64(d.STag))
		p.rdnTO.Set(in, d.TO)
		p.rdnLen.Set(in, uint64(d.Len))
	} else {
		p.rdnValid.Set(in, 0)
	}
	// Stream-end records, behind the Read dones queued before them.
	if len(s.cmds) == 0 && len(s.ends) > 0 && s.doneTaken >= s.endAfter[0] && s.chance(200) {
		p.endValid.Set(in, 1)
		p.endQPN.Set(in, uint64(s.ends[0].QPN))
		p.endLost.Set(in, b2u(s.ends[0].Lost))
	} else {
		p.endValid.Set(in, 0)
		p.endLost.Set(in, 0)
	}
	// Read Request records, like doorbells, after the register writes
	// queued before them (the source's STag is in the table).
	if len(s.cmds) == 0 && len(s.rreqs) > 0 && len(s.regs) == 0 && s.chance(200) {
		r := s.rreqs[0]
		p.rrValid.Set(in, 1)
		p.rrQPN.Set(in, uint64(r.QPN))
		p.rrSinkSTag.Set(in, uint64(r.SinkSTag))
		p.rrSinkTO.Set(in, r.SinkTO)
		p.rrSize.Set(in, uint64(r.Size))
		p.rrSrcSTag.Set(in, uint64(r.SrcSTag))
		p.rrSrcTO.Set(in, r.SrcTO)
		p.rrHdr.SetBytes(in, r.Hdr[:])
	} else {
		p.rrValid.Set(in, 0)
	}
	p.rrdReady.Set(in, b2u(s.chance(200)))
	var push [64]byte
	// Doorbells after the register writes queued before them, as a
	// driver programs the STag table before it posts work that uses it.
	if len(s.cmds) == 0 && len(s.dbs) > 0 && len(s.regs) == 0 && s.chance(200) {
		d := s.dbs[0]
		p.dbValid.Set(in, 1)
		p.dbKind.Set(in, uint64(d.Kind))
		p.dbIndex.Set(in, uint64(d.QPN))
		p.dbValue.Set(in, uint64(d.Value))
		p.dbPushOK.Set(in, b2u(d.Push != nil))
		if d.Push != nil {
			push = *d.Push
		}
	} else {
		p.dbValid.Set(in, 0)
		p.dbPushOK.Set(in, 0)
	}
	p.dbPush.SetBytes(in, push[:])
	regGo := len(s.regs) > 0 && p.initDone.Get(s.out) != 0
	p.regWr.Set(in, b2u(regGo))
	if regGo {
		p.regAddr.Set(in, uint64(s.regs[0][0]))
		p.regData.Set(in, uint64(s.regs[0][1]))
		s.regs = s.regs[1:]
	}
	p.cplReady.Set(in, b2u(!s.HoldRecords && s.chance(160)))
	p.arReady.Set(in, b2u(s.chance(200)))
	p.awReady.Set(in, b2u(s.chance(200)))
	p.wReady.Set(in, b2u(s.chance(200)))
	// R: a beat of a burst whose latency has passed (any of them, at random).
	var ready []int
	for i, b := range s.rd {
		if b.readyAt <= s.Cycles {
			ready = append(ready, i)
			if !s.Timing.Random {
				break
			}
		}
	}
	rSel := -1
	if len(ready) > 0 && s.chance(220) {
		rSel = ready[0]
		if s.Timing.Random {
			rSel = ready[s.rng.IntN(len(ready))]
		}
		b := s.rd[rSel]
		if s.cur == nil {
			s.cur = make([]byte, L)
		}
		s.Mem.Read(b.addr+uint64(b.sent*L), s.cur)
		p.rValid.Set(in, 1)
		p.rID.Set(in, b.id)
		p.rData.SetBytes(in, s.cur)
		p.rResp.Set(in, 0)
		p.rLast.Set(in, b2u(b.sent == b.beats-1))
	} else {
		p.rValid.Set(in, 0)
		p.rLast.Set(in, 0)
	}
	// B: in order, after its latency.
	if len(s.bq) > 0 && s.bq[0].readyAt <= s.Cycles {
		p.bValid.Set(in, 1)
	} else {
		p.bValid.Set(in, 0)
	}
	p.bResp.Set(in, 0)
	p.bID.Set(in, 0)

	if err := s.run(in); err != nil {
		return err
	}
	out := s.out

	// Observe.
	if p.qpValid.Get(in) != 0 && p.qpReady.Get(out) != 0 {
		s.cmds = s.cmds[1:]
	}
	if p.rdnValid.Get(in) != 0 && p.rdnReady.Get(out) != 0 {
		s.dones = s.dones[1:]
		s.doneTaken++
		s.ReadDoneTaken = append(s.ReadDoneTaken, s.Cycles)
	}
	if p.endValid.Get(in) != 0 && p.endReady.Get(out) != 0 {
		s.ends, s.endAfter = s.ends[1:], s.endAfter[1:]
	}
	if p.rrValid.Get(in) != 0 && p.rrReady.Get(out) != 0 {
		s.rreqs = s.rreqs[1:]
	}
	if p.rrdValid.Get(out) != 0 && p.rrdReady.Get(in) != 0 {
		s.RReqDone = append(s.RReqDone, uint32(p.rrdQPN.Get(out)))
	}
	if p.dbValid.Get(in) != 0 && p.dbReady.Get(out) != 0 {
		s.dbs = s.dbs[1:]
		s.DoorbellTaken = append(s.DoorbellTaken, s.Cycles)
	}
	if p.cplValid.Get(out) != 0 && p.cplReady.Get(in) != 0 {
		s.Records = append(s.Records, CardTxRecord{CQE: p.cplCQE.Get(out) != 0, CQ: uint32(p.cplCQ.Get(out)),
			QPN: uint32(p.cplQPN.Get(out)), WRID: p.cplWRID.Get(out), Opcode: uint8(p.cplOp.Get(out)),
			Status: uint8(p.cplStatus.Get(out)), ByteLen: uint32(p.cplLen.Get(out)),
			SQCI: uint16(p.cplSQCI.Get(out)), TXSPI: uint32(p.cplTXSPI.Get(out)), Cycle: s.Cycles})
	}
	if p.arValid.Get(out) != 0 && p.arReady.Get(in) != 0 {
		lat := uint64(s.Timing.ReadLatency)
		if s.Timing.ReadJitter > 0 {
			lat += uint64(s.rng.IntN(s.Timing.ReadJitter))
		}
		id := p.arID.Get(out)
		for _, b := range s.rd {
			if b.id == id {
				return fmt.Errorf("%w: cycle %d: read ID %d reused while in flight", ErrCardTx, s.Cycles, id)
			}
		}
		s.rd = append(s.rd, &ctxReadBurst{id: id, addr: p.arAddr.Get(out), beats: int(p.arLen.Get(out)) + 1, readyAt: s.Cycles + lat})
	}
	if rSel >= 0 {
		if p.rReady.Get(out) == 0 {
			return fmt.Errorf("%w: cycle %d: rready low", ErrCardTx, s.Cycles)
		}
		b := s.rd[rSel]
		b.sent++
		s.ReadBeats++
		if b.sent == b.beats {
			s.rd = append(s.rd[:rSel], s.rd[rSel+1:]...)
		}
	}
	if p.awValid.Get(out) != 0 && p.awReady.Get(in) != 0 {
		a := p.awAddr.Get(out)
		n := int(p.awLen.Get(out)) + 1
		if a/4096 != (a+uint64(n*L)-1)/4096 {
			return fmt.Errorf("%w: cycle %d: write burst at %#x of %d beats crosses 4 KiB", ErrCardTx, s.Cycles, a, n)
		}
		s.wr = append(s.wr, &ctxWriteBurst{addr: a, beats: n})
	}
	if p.wValid.Get(out) != 0 && p.wReady.Get(in) != 0 {
		if len(s.wr) == 0 {
			return fmt.Errorf("%w: cycle %d: W beat before its address", ErrCardTx, s.Cycles)
		}
		b := s.wr[0]
		if b.got == 0 {
			s.FirstBeat = append(s.FirstBeat, s.Cycles)
		}
		data := make([]byte, L)
		p.wData.Bytes(out, data)
		strb := p.wStrb.Get(out)
		base := b.addr + uint64(b.got*L)
		for i := 0; i < L; i++ {
			if strb>>i&1 == 0 {
				continue
			}
			a := base + uint64(i)
			if k := len(s.Writes) - 1; k >= 0 && b.got+i > 0 && s.Writes[k].Addr+uint64(len(s.Writes[k].Data)) == a {
				s.Writes[k].Data = append(s.Writes[k].Data, data[i])
			} else {
				s.Writes = append(s.Writes, RingWrite{Addr: a, Data: []byte{data[i]}})
			}
			s.Mem.Write(a, data[i:i+1])
			for _, q := range s.rings {
				if a >= q.TXSBase && a < q.TXSBase+1<<q.TXSLog {
					s.RingBytes[q.Num]++
				}
			}
		}
		s.WriteBeats++
		b.got++
		if (p.wLast.Get(out) != 0) != (b.got == b.beats) {
			return fmt.Errorf("%w: cycle %d: wlast on beat %d of %d", ErrCardTx, s.Cycles, b.got, b.beats)
		}
		if b.got == b.beats {
			s.wr = s.wr[1:]
			lat := uint64(20)
			if s.Timing.Random {
				lat = uint64(s.rng.IntN(200))
			}
			b.readyAt = max(s.lastB, s.Cycles+lat)
			s.lastB = b.readyAt
			s.bq = append(s.bq, b)
		}
	}
	if p.bValid.Get(in) != 0 && p.bReady.Get(out) != 0 {
		s.bq = s.bq[1:]
	}
	return nil
}
