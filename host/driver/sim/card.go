// Package sim is the "sim" card: the model card (host/driver/model) with
// the MPA datapath and the tagged placement of every QP running through
// Verilated RTL from hw/sim, each output of the RTL compared with its
// golden/cycle model on every cycle. Import it for its side effect to make
// "sim" available:
//
//	import _ "github.com/openiwarp/openiwarp/host/driver/sim"
//	ctx, err := verbs.Open("sim")      // or "sim:512" for a 512-bit datapath
//
// # What runs in the RTL today
//
// Three RTL blocks from hw/rtl, at a datapath width W of 64 to 512 bits
// (256 by default):
//
//   - transmit: mpa_tx_w<W> is the whole MPA transmitter. Each ULPDU the
//     golden engine segments streams into it, one W-bit beat per cycle,
//     with its context (stream offset, length, markers, CRC); the FPDU it
//     streams out (ULPDU_Length, ULPDU, PAD, markers, CRC32c) is what goes
//     on the wire, octet for octet.
//   - receive: mpa_rx_w<W> is the whole MPA receiver. The connection's
//     TCP payload streams into it as it is read, a beat per cycle; it
//     delineates the FPDUs, strips and checks the markers, checks the
//     CRC32c and hands over each ULPDU once its FPDU is good, and these
//     ULPDUs are what the golden engine receives. An error it reports
//     (CRC, marker, length; its kind, §8 code and FPDU offset) ends the
//     stream as golden/mpa's would (a Terminate 2/0/code).
//   - placement: every tagged segment the golden engine receives (RDMA
//     Write, Read Response; iwarp.Config.Placer) streams into
//     placement_w<W>, one per card, with its connection, protection
//     domain and DDP version as sideband. The RTL checks the STag against
//     its own 4096-entry table, translates the tagged offset and emits the
//     DMA writes, which reach the registered memory through the card's
//     IOMMU (a region is one contiguous IOVA range, or, when it spans at
//     most 16 pages, a page list of scattered IOVA pages); or it refuses
//     the segment with a Terminate event and writes nothing. The golden
//     table's verdict (mem.Table.Verify) must agree: the same Terminate
//     cause, or a placement whose DMA writes cover exactly the payload at
//     the right offset of the right region, each byte once (and for a
//     Read Response with L=1, the RTL's completion). Only then do the
//     writes land. The RTL's table mirrors the card's registrations: it is
//     programmed through the block's register map (host/driver/stagtab)
//     when a region is registered (under an STag whose index the table
//     can hold, stagtab.RegisterMirror; at most 3072 regions, Info.MaxMR)
//     or deregistered, and invalidated as soon as the golden engine has
//     accepted a Send with Invalidate for it, before the next segment.
//
// Every cycle of every run, all output ports of each block are compared
// with its golden/cycle model (cycle.MPATx, cycle.MPARx,
// cycle.Placement) driven by the same inputs; a difference fails the QP
// with an error wrapping ErrMismatch that names the block, the cycle and
// the port. A disagreement between the placement RTL and the golden table
// fails the QP the same way (QP.Err joins it to the engine's Terminate).
// Info().CheckedCycles counts the cycles checked, placement's included.
// DDP/RDMAP segmentation, untagged (Send) placement and the Read logic are
// the golden engine's.
//
// Limits: the memory work requests (Local Invalidate, Bind MW) are
// refused with driver.ErrInvalid, since golden/iwarp performs them on its
// table inside the send queue where the card cannot mirror them in step;
// regions registered straight on a PD (not through the card) are unknown
// to the RTL, and a segment to one is a mismatch.
//
// The Verilated libraries are built with make (mk/hw.mk) on first use, so
// the process must run inside the repository with verilator and g++
// installed.
package sim

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/model"
)

// DefaultWidth is the datapath width of "sim" without an argument.
const DefaultWidth = 256

func init() {
	driver.Register("sim", func(name, arg string) (driver.Card, error) { return Open(name, arg) })
}

var (
	blocksMu sync.Mutex
	rxBlocks = map[int]*rxBlock{}
	txBlocks = map[int]*txBlock{}
	// Process-wide counts (every sim card of the process).
	totalCycles, totalFrames atomic.Uint64
)

// CheckedCycles is the number of RTL cycles checked against the cycle
// model by every sim card of this process so far.
func CheckedCycles() uint64 { return totalCycles.Load() }

// Frames is the number of FPDUs that went through the RTL so far.
func Frames() uint64 { return totalFrames.Load() }

// Open opens a sim card; arg is the datapath width in bits ("" for
// DefaultWidth).
func Open(name, arg string) (*model.Card, error) {
	width := DefaultWidth
	if arg != "" {
		w, err := strconv.Atoi(arg)
		if err != nil {
			return nil, fmt.Errorf("%w: sim card width %q (want 32, 64, 128, 256 or 512)", driver.ErrInvalid, arg)
		}
		width = w
	}
	blocksMu.Lock()
	b := rxBlocks[width]
	if b == nil {
		var err error
		if b, err = loadRx(width); err != nil {
			blocksMu.Unlock()
			return nil, err
		}
		rxBlocks[width] = b
	}
	tb := txBlocks[width]
	if tb == nil {
		var err error
		if tb, err = loadTx(width); err != nil {
			blocksMu.Unlock()
			return nil, err
		}
		txBlocks[width] = tb
	}
	blocksMu.Unlock()
	checked := new(atomic.Uint64)
	cb := *b // this card's counter, the process-wide one beside it
	cb.checked = checked
	ctb := *tb
	ctb.checked = checked
	pl, err := newPlacement(width, checked)
	if err != nil {
		return nil, err
	}
	c := model.New(name, model.Options{
		Kind: "sim",
		Detail: fmt.Sprintf("golden/iwarp engine; MPA transmit in Verilated mpa_tx_w%d, receive in mpa_rx_w%d, "+
			"tagged placement (RDMA Write, Read Response) in placement_w%d and its STag table; every cycle checked against golden/cycle", width, width, width),
		Datapath:      func(p mpa.Params) (model.Datapath, error) { return newDatapath(&cb, &ctb, pl, p) },
		CheckedCycles: checked.Load,
		RegisterMR:    pl.registerMR,
		DeregisterMR:  pl.deregisterMR,
		CheckSendWR:   checkSendWR,
		MaxMR:         pl.maxMR,
		Close:         pl.close,
	})
	pl.mu.Lock()
	pl.tab = c.Table()
	pl.mu.Unlock()
	return c, nil
}

// datapath is one QP's MPA layer with the RTL in it.
type datapath struct {
	txr *txEngine // the transmitter: mpa_tx
	rx  *rxEngine // the receiver: mpa_rx
}

func newDatapath(b *rxBlock, tb *txBlock, pl *placement, p mpa.Params) (model.Datapath, error) {
	d := &datapath{}
	f := p.Framer()
	var err error
	if d.txr, err = tb.newEngine(f.Offset, f.Markers, f.CRC); err != nil {
		return model.Datapath{}, err
	}
	// Full operation starts at SeqStart, stream offset 0 (RFC 5044 §4.3).
	cfg := cycle.MPARxCfg{Markers: p.RxMarkers, CRC: p.CRC, Rev0: p.Rev == mpa.Rev0}
	if d.rx, err = b.newEngine(cfg); err != nil {
		d.txr.Close()
		return model.Datapath{}, err
	}
	q := &qpPlacer{p: pl, rev: p.DDPVersion() == 1}
	return model.Datapath{Framer: d, Deframer: invWatch{d, q}, Closer: d, Placer: q, Err: q.Err}, nil
}

// Close frees the QP's RTL instances.
func (d *datapath) Close() error {
	d.txr.Close()
	d.rx.Close()
	return nil
}

// AppendFPDU frames ulpdu in the RTL transmitter.
func (d *datapath) AppendFPDU(dst, ulpdu []byte) ([]byte, error) { return d.txr.AppendFPDU(dst, ulpdu) }

// Feed runs the received octets through the RTL receiver.
func (d *datapath) Feed(p []byte, fn func(mpa.ULPDU) error) error { return d.rx.Feed(p, fn) }
