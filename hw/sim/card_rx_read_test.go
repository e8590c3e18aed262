package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// rxIRD is the IRD of the receive co-simulation's QPs (QP_RD).
const rxIRD = 4

// rxRReq is a Read Request record, as the peer sends it and as card_rx
// hands it to card_tx (m_rreq).
type rxRReq struct {
	qpn      uint32
	sinkSTag uint32
	sinkTO   uint64
	size     uint32
	srcSTag  uint32
	srcTO    uint64
	hdr      string // the DDP header, 18 bytes
}

// rxReadQP is the Read Request side of a co-simulated QP.
type rxReadQP struct {
	msn    uint32   // the next request's MSN
	reqs   []rxRReq // requests in the stream, in order
	starts []uint32 // stream offset of each one's FPDU
	got    int      // records card_rx handed on
	done   int      // IRD entries given back to card_rx
}

// limit is how far the peer's stream may be written into the ring: up to
// the first Read Request beyond IRD, counting the ones card_rx handed on
// whose entries were not given back yet (a peer keeps within IRD).
func (s *rxReadQP) limit(n uint32) uint32 {
	for j, at := range s.starts {
		if j >= s.done+rxIRD {
			return min(n, at)
		}
	}
	return n
}

// rreqDone is an IRD entry the co-simulation gives back to card_rx (as
// card_tx does once it answered the request).
type rreqDone struct {
	qpn uint32
	due uint64
}

// readRequest appends a Read Request of 0 to 2000 bytes from q's region
// (its STag allows remote reads) to a random sink to q's stream; edit, if
// not nil, spoils the ULPDU or the fields before it is framed.
func (c *rxCosim) readRequest(q *rxQP, edit func(ulp []byte) []byte) {
	r := c.rng
	n := r.IntN(2001)
	if r.Chance(32) {
		n = 0
	}
	rr := rdmap.ReadRequestFields{SinkSTag: r.Uint32(), SinkTO: r.Uint64(), Size: uint32(n), SrcSTag: uint32(q.stag),
		SrcTO: q.region + uint64(r.IntN(int(q.regionSize)-n+1))}
	s := &q.rd
	if s.msn == 0 {
		s.msn = 1
	}
	ulp := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadRequest)),
		QN: rdmap.QNReadRequest, MSN: s.msn}.Append(nil)
	hdr := string(ulp)
	ulp = rr.Append(ulp)
	if edit != nil {
		ulp = edit(ulp)
	}
	s.starts = append(s.starts, uint32(len(q.stream)))
	var err error
	q.stream, err = q.framer.AppendFPDU(q.stream, ulp)
	require.NoError(c.t, err)
	s.reqs = append(s.reqs, rxRReq{qpn: q.n, sinkSTag: rr.SinkSTag, sinkTO: rr.SinkTO, size: rr.Size, srcSTag: rr.SrcSTag, srcTO: rr.SrcTO, hdr: hdr})
	s.msn++
}

// serveReadBefore drives m_rreq_ready and gives IRD entries back.
func (c *rxCosim) serveReadBefore() {
	c.set("m_rreq_ready", b2u(c.fixed || c.rng.Chance(c.readyP)))
	c.set("s_rreq_done_valid", 0)
	if len(c.dones) > 0 && c.dones[0].due <= c.cycle {
		c.set("s_rreq_done_valid", 1)
		c.set("s_rreq_done_qpn", uint64(c.dones[0].qpn))
	}
}

// serveReadAfter checks each record card_rx hands on against the request
// the peer sent, and schedules its IRD entry's return.
func (c *rxCosim) serveReadAfter() {
	if c.port("s_rreq_done_valid").Get(c.in) == 1 && c.get("s_rreq_done_ready") == 1 {
		q := c.byQP(c.dones[0].qpn)
		q.rd.done++
		c.dones = c.dones[1:]
	}
	if c.get("m_rreq_valid") == 0 || c.port("m_rreq_ready").Get(c.in) == 0 {
		return
	}
	g := func(n string) uint64 { return c.get("m_rreq_" + n) }
	hdr := make([]byte, 18)
	c.port("m_rreq_hdr").Bytes(c.out, hdr)
	k := rxRReq{qpn: uint32(g("qpn")), sinkSTag: uint32(g("sink_stag")), sinkTO: g("sink_to"), size: uint32(g("size")),
		srcSTag: uint32(g("src_stag")), srcTO: g("src_to"), hdr: string(hdr)}
	q := c.byQP(k.qpn)
	require.NotNil(c.t, q, "cycle %d: a Read Request record of QP %d", c.cycle, k.qpn)
	require.Less(c.t, q.rd.got, len(q.rd.reqs), "cycle %d QP %d: more Read Request records than requests", c.cycle, q.n)
	require.Equal(c.t, q.rd.reqs[q.rd.got], k, "cycle %d QP %d: Read Request %d", c.cycle, q.n, q.rd.got)
	q.rd.got++
	if !c.holdDones {
		c.dones = append(c.dones, rreqDone{qpn: q.n, due: c.cycle + c.latency()})
	}
}

// runModel runs the card model to idle, giving its transmit rings' bytes
// back (TXS_CI) as its status records show them, so that its Read
// Responses never wait for ring room.
func (c *rxCosim) runModel() {
	for moved := true; moved; {
		c.model.Run()
		moved = false
		for _, q := range c.qps {
			b := make([]byte, cs.QPStatSize)
			c.mhost.mem.Read(0x2100_0000+uint64(q.n)*cs.QPStatSize, b)
			if pi := cs.QPStat(b).TXSPI(); pi != q.modelTXSCI {
				q.modelTXSCI = pi
				c.modelW(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBTXSCI, pi)
				moved = true
			}
		}
	}
}

// modelEvent keeps the causes of the model's TERM_SENT events.
func (c *rxCosim) modelEvent(dw cardmodel.DMAWrite) {
	e := cs.EQE(dw.Data)
	if e.Type() == cs.EQETypeTermSent {
		c.modelTerms = append(c.modelTerms, uint64(e.TermLayer())<<12|uint64(e.TermType())<<8|uint64(e.TermCode()))
	}
}

// Read Requests go from card_rx to card_tx's responder exactly as the card
// model accepts them: four QPs whose peers interleave Read Requests (0 B to
// 2000 B, zero-length ones too, sources checked for remote read through
// placement) with Sends and RDMA Writes, within IRD (4); the records are
// taken with random backpressure and their IRD entries given back after 0
// to 250 cycles. Every record is compared (QP, sink, size, source, DDP
// header), in order per QP, besides every placed byte and completion, and
// neither side may see an error.
func TestCardRxReadCosim(t *testing.T) {
	for _, w := range gen.CardRxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			t.Logf("seed %d", seed)
			c := newRxCosim(t, w, seed, 4, nil)
			for _, q := range c.qps {
				seg := 1 + c.rng.IntN(1400)
				for len(q.stream) < 30000 {
					switch k := c.rng.IntN(4); {
					case k == 0:
						rdmaWrite(c.rng, q, 1+c.rng.IntN(2000), 1+c.rng.IntN(1400))
					case k == 1:
						c.sendMessage(q, seg)
					default:
						c.readRequest(q, nil)
					}
				}
			}
			c.drive(400_000)
			n := 0
			for _, q := range c.qps {
				require.Equal(t, len(q.rd.reqs), q.rd.got, "QP %d: Read Request records", q.n)
				n += q.rd.got
			}
			require.Empty(t, c.modelTerms, "the model sent Terminates")
			t.Logf("%d cycles, %d Read Request records", c.cycle, n)
		})
	}
}

// A Read Request that fails a check is never handed on: card_rx reports
// the Terminate cause the card model's Terminate carries (m_rxterm; the
// Terminate itself is not sent by the RTL yet) and its untagged path
// stops. One QP per case: a few good requests, then the bad one.
func TestCardRxReadErrors(t *testing.T) {
	// sized gives a Read Request of 0 bytes (readRequest makes one now
	// and then) a size of 1: only a Read of some bytes has its source
	// checked, by the model as by the RTL.
	sized := func(u []byte) []byte {
		if u[18+12]|u[18+13]|u[18+14]|u[18+15] == 0 {
			u[18+15] = 1
		}
		return u
	}
	cases := []struct {
		name string
		edit func(q *rxQP, ulp []byte) []byte
		hold bool // IRD entries are not given back
	}{
		{"msn", func(q *rxQP, u []byte) []byte { u[13]++; return u }, false},
		{"not_last", func(q *rxQP, u []byte) []byte { u[0] &^= 0x40; return u }, false},
		{"mo", func(q *rxQP, u []byte) []byte { u[17] = 4; return u }, false},
		{"short", func(q *rxQP, u []byte) []byte { return u[:len(u)-4] }, false},
		{"long", func(q *rxQP, u []byte) []byte { return append(u, 1, 2, 3) }, false},
		{"ird", nil, true},
		{"stag_key", func(q *rxQP, u []byte) []byte { u[18+19]++; return sized(u) }, false},
		{"bounds", func(q *rxQP, u []byte) []byte {
			u[18+12], u[18+13], u[18+14], u[18+15] = 0, 2, 0, 0 // 128 KiB: past the 64 KiB region
			return u
		}, false},
		{"rights", func(q *rxQP, u []byte) []byte {
			st := uint32(q.snd.recvSTag) // local write only
			u[18+16], u[18+17], u[18+18], u[18+19] = byte(st>>24), byte(st>>16), byte(st>>8), byte(st)
			for i := 18 + 20; i < 18+28; i++ {
				u[i] = byte(q.snd.recv >> (8 * (18 + 27 - i)))
			}
			return sized(u)
		}, false},
		{"wrap", func(q *rxQP, u []byte) []byte {
			for i := 18 + 20; i < 18+28; i++ {
				u[i] = 0xff
			}
			u[18+12], u[18+13], u[18+14], u[18+15] = 0, 0, 1, 0
			return u
		}, false},
	}
	for _, w := range gen.CardRxWidths {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%d/%s", w, tc.name), func(t *testing.T) {
				seed := seedFor(t.Name())
				t.Logf("seed %d", seed)
				c := newRxCosim(t, w, seed, 1, nil)
				c.allowTerm, c.holdDones = true, tc.hold
				q := c.qps[0]
				good := 1 + c.rng.IntN(3)
				if tc.hold {
					good = rxIRD
				}
				for i := 0; i < good; i++ {
					c.readRequest(q, nil)
				}
				c.readRequest(q, func(u []byte) []byte {
					if tc.edit == nil {
						return u
					}
					return tc.edit(q, u)
				})
				bad := q.rd.reqs[len(q.rd.reqs)-1]
				q.rd.reqs = q.rd.reqs[:len(q.rd.reqs)-1]
				q.rd.starts = q.rd.starts[:len(q.rd.starts)-1]
				q.written = uint32(len(q.stream))
				c.mhost.mem.Write(q.rxs, q.stream)
				c.rtlMem.Write(q.rxs, q.stream)
				c.modelW(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, q.written)
				c.runModel()
				c.doorbellRTL(q)
				for start := c.cycle; len(c.terms) == 0; c.step() {
					require.Less(t, c.cycle-start, uint64(200_000), "watchdog: no m_rxterm for the bad Read Request")
				}
				for i := 0; i < 500; i++ {
					c.step()
				}
				require.Equal(t, good, q.rd.got, "Read Request records before the bad one")
				require.Len(t, c.modelTerms, 1, "the model's Terminates")
				require.Equal(t, fmt.Sprintf("%#x", c.modelTerms[0]), fmt.Sprintf("%#x", c.terms[0]), "Terminate cause (request %+v)", bad)
				require.Len(t, c.terms, 1)
			})
		}
	}
}
