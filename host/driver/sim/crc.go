package sim

import (
	"fmt"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// ErrMismatch is wrapped by the error a QP fails with when the RTL's
// outputs differ from the cycle model's.
var ErrMismatch = fmt.Errorf("sim: RTL output differs from the golden cycle model")

// crcBlock is what a card needs to make CRC engines: the loaded Verilated
// library of crc32c_w<width> and its port layout.
type crcBlock struct {
	width   int
	lib     *hwsim.Lib
	layout  hwsim.Layout
	in      crcIn
	out     crcOut
	checked *atomic.Uint64 // the card's count of checked cycles
}

type crcIn struct{ rst, data, keep, valid, last, mReady hwsim.Port }
type crcOut struct{ sReady, mData, mUser, mValid hwsim.Port }

// loadCRC loads (building it with make if needed) crc32c_w<width>.
func loadCRC(width int) (*crcBlock, error) {
	m, err := gen.CRC32C(width)
	if err != nil {
		return nil, err
	}
	b := &crcBlock{width: width}
	b.lib, b.layout, err = loadBlock(m, []port{
		{&b.in.rst, "rst", true}, {&b.in.data, "s_axis_tdata", true}, {&b.in.keep, "s_axis_tkeep", true},
		{&b.in.valid, "s_axis_tvalid", true}, {&b.in.last, "s_axis_tlast", true}, {&b.in.mReady, "m_axis_tready", true},
		{&b.out.sReady, "s_axis_tready", false}, {&b.out.mData, "m_axis_tdata", false},
		{&b.out.mUser, "m_axis_tuser", false}, {&b.out.mValid, "m_axis_tvalid", false}})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// crcEngine is one instance of the block with its cycle model beside it:
// every cycle it runs, each output port of the RTL is compared with the
// model's. One engine serves one direction of one QP (one goroutine).
type crcEngine struct {
	b     *crcBlock
	inst  *hwsim.Instance
	model *cycle.CRC32C
	in    []uint32
	out   []uint32
	ins   []cycle.CRC32CIn
	lane  []byte
	cycle uint64
	err   error // the first mismatch: the engine refuses to run after it
}

func (b *crcBlock) newEngine() (*crcEngine, error) {
	m, err := cycle.NewCRC32C(b.width)
	if err != nil {
		return nil, err
	}
	e := &crcEngine{b: b, inst: b.lib.New(), model: m, lane: make([]byte, b.width/8)}
	// Two cycles of reset, compared like any other.
	e.ins = append(e.ins[:0], cycle.CRC32CIn{Reset: true, MReady: true}, cycle.CRC32CIn{Reset: true, MReady: true})
	if _, err := e.run(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close frees the Verilated instance.
func (e *crcEngine) Close() error {
	e.inst.Close()
	return nil
}

// run drives e.ins through the RTL and the model and returns the cycle
// (index into e.ins) where m_axis_tvalid was first high, or -1.
func (e *crcEngine) run() (int, error) {
	b := e.b
	iw, ow := b.layout.InWords, b.layout.OutWords
	n := len(e.ins)
	e.in = append(e.in[:0], make([]uint32, n*iw)...)
	if cap(e.out) < n*ow {
		e.out = make([]uint32, n*ow)
	}
	e.out = e.out[:n*ow]
	for c, x := range e.ins {
		v := e.in[c*iw : (c+1)*iw]
		b.in.rst.Set(v, b2u(x.Reset))
		b.in.data.SetBytes(v, x.Data)
		b.in.keep.Set(v, x.Keep)
		b.in.valid.Set(v, b2u(x.Valid))
		b.in.last.Set(v, b2u(x.Last))
		b.in.mReady.Set(v, b2u(x.MReady))
	}
	if err := e.inst.Run(e.in, e.out); err != nil {
		return -1, err
	}
	first := -1
	for c, x := range e.ins {
		if x.Data == nil {
			x.Data = e.lane
		}
		want := e.model.Step(x)
		got := e.out[c*ow : (c+1)*ow]
		for _, cmp := range []struct {
			p    hwsim.Port
			want uint64
		}{{b.out.sReady, b2u(want.SReady)}, {b.out.mValid, b2u(want.MValid)}, {b.out.mData, uint64(want.CRC)}, {b.out.mUser, b2u(want.ResidueOK)}} {
			if g := cmp.p.Get(got); g != cmp.want {
				e.err = fmt.Errorf("%w: crc32c_w%d cycle %d: port %s: expected %#x, got %#x",
					ErrMismatch, b.width, e.cycle+uint64(c), cmp.p.Name, cmp.want, g)
				return -1, e.err
			}
		}
		if first < 0 && want.MValid {
			first = c
		}
	}
	e.cycle += uint64(n)
	b.checked.Add(uint64(n))
	totalCycles.Add(uint64(n))
	return first, nil
}

// CRC runs frame through the block, one full beat per cycle with the
// result side always ready, and returns the RTL's CRC32c of the frame and
// its residue check (true when the frame ends with its own correct CRC).
func (e *crcEngine) CRC(frame []byte) (uint32, bool, error) {
	if e.err != nil {
		return 0, false, e.err
	}
	if len(frame) == 0 {
		return 0, false, fmt.Errorf("sim: empty frame for the CRC block")
	}
	w := e.b.width / 8
	e.ins = e.ins[:0]
	for off := 0; off < len(frame); off += w {
		k := min(w, len(frame)-off)
		keep := ^uint64(0)
		if k < 64 {
			keep = 1<<k - 1
		}
		e.ins = append(e.ins, cycle.CRC32CIn{Data: frame[off : off+k : off+k], Keep: keep, Valid: true,
			Last: off+k == len(frame), MReady: true})
	}
	beats := len(e.ins)
	for range e.model.Latency() + 1 {
		e.ins = append(e.ins, cycle.CRC32CIn{MReady: true})
	}
	// The model reads W lanes of data: give the short last beat full lanes.
	last := &e.ins[beats-1]
	if len(last.Data) < w {
		copy(e.lane, last.Data)
		clear(e.lane[len(last.Data):])
		last.Data = append([]byte(nil), e.lane...)
	}
	c, err := e.run()
	if err != nil {
		return 0, false, err
	}
	if c < beats {
		return 0, false, fmt.Errorf("sim: crc32c_w%d gave no result for a %d-byte frame", e.b.width, len(frame))
	}
	got := e.out[c*e.b.layout.OutWords : (c+1)*e.b.layout.OutWords]
	totalFrames.Add(1)
	return uint32(e.b.out.mData.Get(got)), e.b.out.mUser.Get(got) != 0, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
