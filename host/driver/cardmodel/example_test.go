package cardmodel_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// memHost is host memory as one flat array from address 0.
type memHost struct{ mem []byte }

func (h *memHost) ReadMem(a uint64, p []byte) error {
	if a+uint64(len(p)) > uint64(len(h.mem)) {
		return fmt.Errorf("no memory at %#x", a)
	}
	copy(p, h.mem[a:])
	return nil
}

func (h *memHost) WriteMem(a uint64, p []byte) error {
	if a+uint64(len(p)) > uint64(len(h.mem)) {
		return fmt.Errorf("no memory at %#x", a)
	}
	copy(h.mem[a:], p)
	return nil
}

func (h *memHost) Interrupt(int) {}

// A driver sets up an EQ, a CQ and a QP, posts a Send with inline data
// and rings the SQ doorbell; Run writes the new QP's status record, puts
// the FPDU on the transmit stream ring, publishes TXS_PI and SQ_CI in the
// status record and writes the completion.
func Example() {
	h := &memHost{mem: make([]byte, 1<<20)}
	card, _ := cardmodel.New(cardmodel.Config{Width: 64, Host: h, Observe: func(w cardmodel.DMAWrite) {
		fmt.Printf("DMA write: %-6v %3d bytes at %#x\n", w.Kind, len(w.Data), w.Addr)
	}})
	const eq, qpstat, cq, sq, rq, txs, rxs = 0x1000, 0x2000, 0x4000, 0x10000, 0x20000, 0x40000, 0x80000
	w := func(off, v uint32) {
		if err := card.Write32(off, v); err != nil {
			panic(err)
		}
	}
	w(cs.EQBaseLo, eq)
	w(cs.EQCfg, 6|1<<cs.EQCfgEnableShift)
	w(cs.QpstatBaseLo, qpstat)
	w(cs.CQNum, 1)
	w(cs.CQBaseLo, cq)
	w(cs.CQCfg, 6)
	w(cs.CQCmd, uint32(cs.CQOpCreate))
	w(cs.QPNum, 1)
	w(cs.QPPD, 1)
	w(cs.QPSQBaseLo, sq)
	w(cs.QPRQBaseLo, rq)
	w(cs.QPTXSBaseLo, txs)
	w(cs.QPRXSBaseLo, rxs)
	w(cs.QPSizes, 6|6<<8|12<<16|12<<24)
	w(cs.QPCqs, 1|1<<16)
	w(cs.QPMPA, 1024|1<<cs.QPMPACRCShift)
	w(cs.QPRD, 1|1<<8)
	w(cs.QPCmd, uint32(cs.QPOpCreate))
	w(cs.Ctrl, 1)

	wqe := cs.WQE(h.mem[sq : sq+cs.BB])
	wqe.SetOpcode(cs.WQEOpcodeSend)
	wqe.SetSignaled(true)
	wqe.SetInline(true)
	wqe.SetBBS(1)
	wqe.SetWRID(42)
	wqe.SetInlineLen(5)
	copy(h.mem[sq+cs.WQEHdr:], "hello")
	w(cs.QPDBBase+1*cs.QPDBStride+cs.QPDBSQPI, 1)
	card.Run()

	stat := cs.QPStat(h.mem[qpstat+1*cs.QPStatSize:])
	d := mpa.NewDeframer(mpa.DeframerConfig{CRC: true})
	d.Feed(h.mem[txs:txs+stat.TXSPI()], func(u mpa.ULPDU) error {
		seg, _ := ddp.Parse(u.Data)
		fmt.Printf("FPDU: %v MSN %d payload %q\n", seg.Control, seg.Untagged().MSN(), seg.Payload)
		return nil
	})
	c := cs.CQE(h.mem[cq:])
	fmt.Printf("CQE: wr %d %v %v owner %v\n", c.WRID(), c.Opcode(), c.Status(), c.Owner())
	// Output:
	// DMA write: QPSTAT  32 bytes at 0x2020
	// DMA write: stream  32 bytes at 0x40000
	// DMA write: QPSTAT  32 bytes at 0x2020
	// DMA write: CQE     32 bytes at 0x4000
	// FPDU: UL DV=1 MSN 1 payload "hello"
	// CQE: wr 42 SEND SUCCESS owner true
}

// The queue logic alone, as the co-simulation of the card's card_cq block
// drives it: a CQ of two entries armed for the next completion, an armed
// EQ; the third completion finds the CQ full.
func ExampleQueues() {
	q := cardmodel.NewQueues(func(w cardmodel.DMAWrite) error {
		fmt.Printf("%-3v at %#x, last byte %#02x\n", w.Kind, w.Addr, w.Data[len(w.Data)-1])
		return nil
	})
	_ = q.EQConfig(0x10000, 4|7<<cs.EQCfgVectorShift|1<<cs.EQCfgEnableShift)
	q.EQDoorbell(1 << cs.EQDBArmShift)
	_ = q.CQCommand(3, 0x20000, 1, cs.CQOpCreate)
	q.CQDoorbell(3, 1<<cs.CQDBCIArmShift)
	for i := 0; i < 3; i++ {
		r, _ := q.Complete(3, cardmodel.Completion{QPN: 9, WRID: uint64(i), Op: cs.WCOpcodeSend})
		fmt.Println("completion", i, r == cardmodel.CQWritten)
	}
	v, ok := q.Interrupt()
	fmt.Println("interrupt", v, ok)
	// Output:
	// CQE at 0x20000, last byte 0x80
	// EQE at 0x10000, last byte 0x80
	// completion 0 true
	// CQE at 0x20020, last byte 0x80
	// completion 1 true
	// EQE at 0x10010, last byte 0x80
	// completion 2 false
	// interrupt 7 true
}
