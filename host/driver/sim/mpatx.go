package sim

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// txBlock is the loaded Verilated mpa_tx_w<width>: the whole MPA
// transmitter (ULPDU_Length, PAD, markers, CRC32c) in RTL.
type txBlock struct {
	width   int
	lib     *hwsim.Lib
	layout  hwsim.Layout
	checked *atomic.Uint64

	rst, data, valid, last, off, ulen, markers, crc, mReady hwsim.Port
	sReady, mData, mKeep, mValid, mLast, mUser              hwsim.Port
}

func loadTx(width int) (*txBlock, error) {
	m, err := gen.MPATx(width)
	if err != nil {
		return nil, err
	}
	b := &txBlock{width: width}
	b.lib, b.layout, err = loadBlock(m, []port{
		{&b.rst, "rst", true}, {&b.data, "s_axis_tdata", true}, {&b.valid, "s_axis_tvalid", true},
		{&b.last, "s_axis_tlast", true}, {&b.off, "s_offset", true}, {&b.ulen, "s_ulpdu_len", true},
		{&b.markers, "s_markers", true}, {&b.crc, "s_crc", true}, {&b.mReady, "m_axis_tready", true},
		{&b.sReady, "s_axis_tready", false}, {&b.mData, "m_axis_tdata", false}, {&b.mKeep, "m_axis_tkeep", false},
		{&b.mValid, "m_axis_tvalid", false}, {&b.mLast, "m_axis_tlast", false}, {&b.mUser, "m_axis_tuser", false}})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// txEngine is one QP's transmitter: the RTL instance and its cycle model,
// with the half connection's framing state.
type txEngine struct {
	b       *txBlock
	inst    *hwsim.Instance
	model   *cycle.MPATx
	offset  uint32 // stream offset of the next FPDU from SeqStart
	markers bool
	crc     bool

	ins   []cycle.MPATxIn
	want  []cycle.MPATxOut
	wdata []byte // the model's output data, lanes per cycle (its Data aliases the model)
	vec   vectors
	zero  []byte
	err   error
}

func (b *txBlock) newEngine(offset uint32, markers, crc bool) (*txEngine, error) {
	m, err := cycle.NewMPATx(b.width)
	if err != nil {
		return nil, err
	}
	e := &txEngine{b: b, inst: b.lib.New(), model: m, vec: vectors{block: fmt.Sprintf("mpa_tx_w%d", b.width), checked: b.checked}, offset: offset, markers: markers, crc: crc,
		zero: make([]byte, b.width/8)}
	e.ins, e.want, e.wdata = e.ins[:0], e.want[:0], e.wdata[:0]
	for range 2 {
		e.step(cycle.MPATxIn{Reset: true, Data: e.zero, MReady: true})
	}
	if err := e.check(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close frees the Verilated instance.
func (e *txEngine) Close() error { e.inst.Close(); return nil }

// step runs the model one cycle and records its inputs and outputs.
func (e *txEngine) step(in cycle.MPATxIn) cycle.MPATxOut {
	o := e.model.Step(in)
	e.ins = append(e.ins, in)
	lanes := e.b.width / 8
	d := o.Data[:min(len(o.Data), lanes)]
	e.wdata = append(e.wdata, d...)
	e.wdata = append(e.wdata, e.zero[:lanes-len(d)]...)
	o.Data = nil
	e.want = append(e.want, o)
	return o
}

// check runs the recorded inputs through the RTL and compares every
// output of every cycle with the model's.
func (e *txEngine) check() error {
	b := e.b
	n := len(e.ins)
	err := e.vec.check(e.inst, b.layout, n, func(c int, v []uint32) {
		x := e.ins[c]
		b.rst.Set(v, b2u(x.Reset))
		b.data.SetBytes(v, x.Data)
		b.valid.Set(v, b2u(x.Valid))
		b.last.Set(v, b2u(x.Last))
		b.off.Set(v, uint64(x.Ctx.Offset))
		b.ulen.Set(v, uint64(x.Ctx.Len))
		b.markers.Set(v, b2u(x.Ctx.Markers))
		b.crc.Set(v, b2u(x.Ctx.CRC))
		b.mReady.Set(v, b2u(x.MReady))
	}, func(c int, dst []portWant) []portWant {
		w := e.want[c]
		return append(dst, portWant{b.sReady, b2u(w.SReady)}, portWant{b.mValid, b2u(w.Valid)}, portWant{b.mKeep, w.Keep},
			portWant{b.mLast, b2u(w.Last)}, portWant{b.mUser, uint64(w.User)})
	}, b.mData, e.wdata)
	if errors.Is(err, ErrMismatch) {
		e.err = err // sticky: the engine refuses to run after a mismatch
	}
	return err
}

// AppendFPDU streams ulpdu through the RTL transmitter and appends the
// FPDU it produced (every cycle checked against the model).
func (e *txEngine) AppendFPDU(dst, ulpdu []byte) ([]byte, error) {
	if e.err != nil {
		return dst, e.err
	}
	lanes := e.b.width / 8
	if len(ulpdu) == 0 || len(ulpdu) > 0xffff {
		return dst, fmt.Errorf("sim: mpa_tx cannot frame a ULPDU of %d octets", len(ulpdu))
	}
	ctx := cycle.MPATxCtx{Offset: e.offset, Len: len(ulpdu), Markers: e.markers, CRC: e.crc}
	e.ins, e.want, e.wdata = e.ins[:0], e.want[:0], e.wdata[:0]
	beats := (len(ulpdu) + lanes - 1) / lanes
	next, done := 0, false
	var user uint32
	var beat []byte
	for limit := 8*beats + 64; !done; limit-- {
		if limit == 0 {
			return dst, fmt.Errorf("sim: mpa_tx model produced no end of FPDU for a %d-octet ULPDU", len(ulpdu))
		}
		in := cycle.MPATxIn{Data: e.zero, Ctx: ctx, MReady: true}
		if next < beats {
			lo := next * lanes
			in.Data, in.Valid, in.Last = ulpdu[lo:min(lo+lanes, len(ulpdu))], true, next == beats-1
			if len(in.Data) < lanes { // the short last beat, padded with zero lanes
				beat = append(append(beat[:0], in.Data...), e.zero[:lanes-len(in.Data)]...)
				in.Data = beat
			}
		}
		o := e.step(in)
		if in.Valid && o.SReady {
			next++
		}
		if o.Valid && o.Last {
			done, user = true, o.User
		}
	}
	if err := e.check(); err != nil {
		return dst, err
	}
	for c, w := range e.want {
		if w.Valid {
			k := bits.TrailingZeros64(^w.Keep)
			dst = append(dst, e.wdata[c*lanes:c*lanes+min(k, lanes)]...)
		}
	}
	e.offset = user
	totalFrames.Add(1)
	return dst, nil
}
