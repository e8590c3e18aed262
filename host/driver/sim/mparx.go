package sim

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/hw/gen"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// rxBlock is the loaded Verilated mpa_rx_w<width>: the whole MPA receiver
// (delineation, marker stripping and checks, CRC32c, the ULPDU buffer) in
// RTL.
type rxBlock struct {
	width   int
	lib     *hwsim.Lib
	layout  hwsim.Layout
	checked *atomic.Uint64 // the card's count of checked cycles

	rst, data, keep, valid, last, off, markers, crc, rev0, mReady hwsim.Port
	sReady, mData, mKeep, mValid, mLast, mLen                     hwsim.Port
	errValid, errKind, errCode, errOff, eos                       hwsim.Port
}

func loadRx(width int) (*rxBlock, error) {
	m, err := gen.MPARx(width)
	if err != nil {
		return nil, err
	}
	b := &rxBlock{width: width}
	b.lib, b.layout, err = loadBlock(m, []port{
		{&b.rst, "rst", true}, {&b.data, "s_axis_tdata", true}, {&b.keep, "s_axis_tkeep", true},
		{&b.valid, "s_axis_tvalid", true}, {&b.last, "s_axis_tlast", true}, {&b.off, "cfg_offset", true},
		{&b.markers, "cfg_markers", true}, {&b.crc, "cfg_crc", true}, {&b.rev0, "cfg_rev0", true},
		{&b.mReady, "m_axis_tready", true},
		{&b.sReady, "s_axis_tready", false}, {&b.mData, "m_axis_tdata", false}, {&b.mKeep, "m_axis_tkeep", false},
		{&b.mValid, "m_axis_tvalid", false}, {&b.mLast, "m_axis_tlast", false}, {&b.mLen, "m_axis_tuser_len", false},
		{&b.errValid, "m_err_valid", false}, {&b.errKind, "m_err_kind", false}, {&b.errCode, "m_err_code", false},
		{&b.errOff, "m_err_offset", false}, {&b.eos, "m_eos", false}})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// rxEngine is one QP's receiver: the RTL instance and its cycle model,
// fed the TCP payload of the connection as it arrives.
type rxEngine struct {
	b     *rxBlock
	inst  *hwsim.Instance
	model *cycle.MPARx
	cfg   cycle.MPARxCfg

	ins   []cycle.MPARxIn
	want  []cycle.MPARxOut
	wdata []byte // the model's output data, lanes per cycle
	vec   vectors
	zero  []byte
	ulpdu []byte // the ULPDU being gathered from m_axis
	err   error  // sticky: a mismatch, or the MPA error the RTL reported
}

func (b *rxBlock) newEngine(cfg cycle.MPARxCfg) (*rxEngine, error) {
	m, err := cycle.NewMPARx(b.width)
	if err != nil {
		return nil, err
	}
	e := &rxEngine{b: b, inst: b.lib.New(), model: m, vec: vectors{block: fmt.Sprintf("mpa_rx_w%d", b.width), checked: b.checked}, cfg: cfg,
		zero: make([]byte, b.width/8)}
	for range 2 {
		e.step(cycle.MPARxIn{Reset: true, Cfg: cfg, Data: e.zero, MReady: true})
	}
	if err := e.check(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close frees the Verilated instance.
func (e *rxEngine) Close() error { e.inst.Close(); return nil }

func (e *rxEngine) step(in cycle.MPARxIn) cycle.MPARxOut {
	o := e.model.Step(in)
	e.ins = append(e.ins, in)
	lanes := e.b.width / 8
	e.wdata = append(e.wdata, o.Data[:lanes]...)
	o.Data = nil
	e.want = append(e.want, o)
	return o
}

// check runs the recorded inputs through the RTL and compares every
// output of every cycle with the model's; the recorded cycles are then
// dropped.
func (e *rxEngine) check() error {
	b := e.b
	n := len(e.ins)
	err := e.vec.check(e.inst, b.layout, n, func(c int, v []uint32) {
		x := e.ins[c]
		b.rst.Set(v, b2u(x.Reset))
		b.data.SetBytes(v, x.Data)
		b.keep.Set(v, x.Keep)
		b.valid.Set(v, b2u(x.Valid))
		b.last.Set(v, b2u(x.Last))
		b.off.Set(v, uint64(x.Cfg.Offset))
		b.markers.Set(v, b2u(x.Cfg.Markers))
		b.crc.Set(v, b2u(x.Cfg.CRC))
		b.rev0.Set(v, b2u(x.Cfg.Rev0))
		b.mReady.Set(v, b2u(x.MReady))
	}, func(c int, dst []portWant) []portWant {
		w := e.want[c]
		return append(dst, portWant{b.sReady, b2u(w.SReady)}, portWant{b.mValid, b2u(w.Valid)}, portWant{b.mKeep, w.Keep},
			portWant{b.mLast, b2u(w.Last)}, portWant{b.mLen, uint64(w.Len)}, portWant{b.errValid, b2u(w.ErrValid)},
			portWant{b.errKind, uint64(w.ErrKind)}, portWant{b.errCode, uint64(w.ErrCode)},
			portWant{b.errOff, uint64(w.ErrOffset)}, portWant{b.eos, b2u(w.EOS)})
	}, b.mData, e.wdata)
	if errors.Is(err, ErrMismatch) {
		e.err = err // sticky: the engine refuses to run after a mismatch
	}
	return err
}

// Feed streams p, the next octets of the connection's TCP payload, into
// the RTL receiver a beat per cycle (the short last beat partial), then
// idles until the block has nothing left to do, checks every cycle
// against the model, and hands fn each ULPDU the RTL delivered, in order.
// An MPA error the RTL reports comes back as an *mpa.Error with the kind,
// code and FPDU offset of its error outputs; it is sticky, as is a
// mismatch.
func (e *rxEngine) Feed(p []byte, fn func(mpa.ULPDU) error) error {
	if e.err != nil {
		return e.err
	}
	lanes := e.b.width / 8
	e.ins, e.want, e.wdata = e.ins[:0], e.want[:0], e.wdata[:0]
	beat := make([]byte, lanes)
	quiet := 0
	for off, limit := 0, 4*(len(p)/lanes)+1<<20; quiet < 2; limit-- {
		if limit == 0 {
			return fmt.Errorf("sim: mpa_rx model did not settle after %d octets", len(p))
		}
		in := cycle.MPARxIn{Cfg: e.cfg, Data: e.zero, MReady: true}
		n := min(lanes, len(p)-off)
		if n > 0 {
			copy(beat, p[off:off+n])
			clear(beat[n:])
			in.Data, in.Valid, in.Keep = beat, true, 1<<n-1
		}
		o := e.step(in)
		if n > 0 && o.SReady {
			off += n
			beat = make([]byte, lanes) // the recorded input keeps the old one
		}
		if off == len(p) && e.model.Quiet() {
			quiet++
		} else {
			quiet = 0
		}
		if len(e.ins) == 8192 && off < len(p) {
			// Long inputs are checked in batches (the ULPDUs so far are delivered too).
			if err := e.deliver(fn); err != nil {
				return err
			}
		}
	}
	return e.deliver(fn)
}

// deliver checks the recorded cycles, passes on the ULPDUs the RTL gave
// out during them and reports an error the RTL raised.
func (e *rxEngine) deliver(fn func(mpa.ULPDU) error) error {
	if err := e.check(); err != nil {
		return err
	}
	lanes := e.b.width / 8
	var rtlErr *mpa.Error
	for c, w := range e.want {
		if w.Valid {
			k := min(lanes, int(w.Len)-len(e.ulpdu))
			e.ulpdu = append(e.ulpdu, e.wdata[c*lanes:c*lanes+k]...)
			if w.Last {
				u := e.ulpdu
				e.ulpdu = nil
				totalFrames.Add(1)
				if err := fn(mpa.ULPDU{Data: u}); err != nil {
					e.err = err
					return err
				}
			}
		}
		if w.ErrValid && rtlErr == nil {
			rtlErr = &mpa.Error{Kind: mpa.Kind(w.ErrKind), Code: mpa.ErrorCode(w.ErrCode), Offset: uint64(w.ErrOffset),
				Msg: fmt.Sprintf("reported by the RTL (mpa_rx_w%d) for the FPDU at stream offset %d", e.b.width, w.ErrOffset)}
		}
	}
	e.ins, e.want, e.wdata = e.ins[:0], e.want[:0], e.wdata[:0]
	if rtlErr != nil {
		e.err = rtlErr
		return rtlErr
	}
	return nil
}

// ErrMismatch is wrapped by the error a QP fails with when the RTL's
// outputs differ from the cycle model's.
var ErrMismatch = fmt.Errorf("sim: RTL output differs from the golden cycle model")

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
