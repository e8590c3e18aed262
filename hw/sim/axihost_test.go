package sim

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// windowMem is HostMem that refuses every access touching [lo, hi).
type windowMem struct {
	HostMem
	lo, hi uint64
}

var errRefused = errors.New("refused")

func (m windowMem) refused(addr uint64, n int) bool { return addr < m.hi && addr+uint64(n) > m.lo }

func (m windowMem) ReadMem(addr uint64, p []byte) error {
	if m.refused(addr, len(p)) {
		return errRefused
	}
	m.Read(addr, p)
	return nil
}

func (m windowMem) WriteMem(addr uint64, p []byte) error {
	if m.refused(addr, len(p)) {
		return errRefused
	}
	m.Write(addr, p)
	return nil
}

type axiReq struct {
	addr uint64
	n    int
	err  bool // touches the refused window
}

// axiHostDriver drives dma_wr's or dma_rd's request side (and dma_wr's
// data stream) while an AXIHost answers its AXI4 master.
type axiHostDriver struct {
	host          *AXIHost
	reqValid      Port
	reqReady      Port
	reqAddr       Port
	reqLen        Port
	reqTag        Port
	sData, sValid Port // dma_wr's input stream
	sReady        Port
	oData, oKeep  Port // dma_rd's output stream
	oValid, oLast Port
	oReady, oErr  Port
	dValid, dErr  Port // dma_wr's completions
	dReady        Port
	rst           Port
	write         bool
	lanes         int
	rng           Rand
	reqs          []axiReq
	next, fed     int
	fedBytes      int
	done          int
	got           []byte // dma_rd: bytes of the request being read
	gotErr        bool
	err           error
	rstLeft       int
}

func wantByte(addr uint64) byte { return byte(addr*7 + addr>>9) }

func (d *axiHostDriver) Next(in []uint32) {
	d.rst.Set(in, b2u(d.rstLeft > 0))
	if d.next < len(d.reqs) {
		q := d.reqs[d.next]
		d.reqValid.Set(in, 1)
		d.reqAddr.Set(in, q.addr)
		d.reqLen.Set(in, uint64(q.n-1))
		d.reqTag.Set(in, uint64(d.next&0xff))
	} else {
		d.reqValid.Set(in, 0)
	}
	if d.write {
		buf := make([]byte, d.lanes)
		ok := d.fed < d.next && d.rng.Chance(200)
		if ok {
			q := d.reqs[d.fed]
			for i := range buf {
				if d.fedBytes+i < q.n {
					buf[i] = wantByte(q.addr + uint64(d.fedBytes+i))
				}
			}
		}
		d.sData.SetBytes(in, buf)
		d.sValid.Set(in, b2u(ok))
		d.dReady.Set(in, 1)
	} else {
		d.oReady.Set(in, b2u(d.rng.Chance(220)))
	}
	d.host.Drive(in)
}

func (d *axiHostDriver) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, a...)
	}
}

func (d *axiHostDriver) Observe(in, out []uint32) {
	if d.rstLeft > 0 {
		d.rstLeft--
		return
	}
	if err := d.host.Observe(in, out); err != nil {
		d.fail("%v", err)
	}
	if d.reqValid.Get(in) != 0 && d.reqReady.Get(out) != 0 {
		d.next++
	}
	if d.write {
		if d.sValid.Get(in) != 0 && d.sReady.Get(out) != 0 {
			d.fedBytes += d.lanes
			if d.fedBytes >= d.reqs[d.fed].n {
				d.fed++
				d.fedBytes = 0
			}
		}
		if d.dValid.Get(out) != 0 && d.dReady.Get(in) != 0 {
			if e := d.dErr.Get(out) != 0; e != d.reqs[d.done].err {
				d.fail("write %d at %#x (%d bytes): error %v, want %v", d.done, d.reqs[d.done].addr, d.reqs[d.done].n, e, d.reqs[d.done].err)
			}
			d.done++
		}
		return
	}
	if d.oValid.Get(out) != 0 && d.oReady.Get(in) != 0 {
		beat := make([]byte, d.lanes)
		d.oData.Bytes(out, beat)
		keep := d.oKeep.Get(out)
		for i := range beat {
			if keep>>i&1 != 0 {
				d.got = append(d.got, beat[i])
			}
		}
		d.gotErr = d.gotErr || d.oErr.Get(out) != 0
		if d.oLast.Get(out) != 0 {
			q := d.reqs[d.done]
			if d.gotErr != q.err {
				d.fail("read %d at %#x (%d bytes): error %v, want %v", d.done, q.addr, q.n, d.gotErr, q.err)
			} else if !q.err {
				for i, b := range d.got {
					if b != wantByte(q.addr+uint64(i)) {
						d.fail("read %d at %#x: byte %d is %#x, want %#x", d.done, q.addr, i, b, wantByte(q.addr+uint64(i)))
						break
					}
				}
				if len(d.got) != q.n {
					d.fail("read %d: %d bytes, want %d", d.done, len(d.got), q.n)
				}
			}
			d.got, d.gotErr = d.got[:0], false
			d.done++
		}
	}
}

// AXIHost serves dma_wr and then dma_rd (64 and 512 bits): random
// requests, some touching a window the memory refuses, answered with
// random latency, reordering and backpressure; every byte written outside
// the window reads back, every request touching it completes with an
// error, and the refused accesses are in Faults.
func TestAXIHostServesDMA(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			rng := NewRand(seed)
			mem := windowMem{HostMem: HostMem{}, lo: 0x40000, hi: 0x41000}
			var reqs []axiReq
			for i := 0; i < 120; i++ {
				n := 1 + rng.IntN(3000)
				addr := uint64(rng.IntN(0x80000))
				if i%10 == 3 {
					addr = mem.lo - uint64(rng.IntN(100))
				}
				reqs = append(reqs, axiReq{addr: addr, n: n, err: mem.refused(addr, n)})
			}
			timing := AXITiming{ReadLatency: 20, ReadJitter: 200, WriteLatency: 5, WriteJitter: 50, Reorder: true, Ready: 170}
			for _, write := range []bool{true, false} {
				var m *gen.Module
				var err error
				if write {
					m, err = gen.DMAWr(gen.DMAWrDefault(w))
				} else {
					m, err = gen.DMARd(gen.DMARdDefault(w))
				}
				require.NoError(t, err)
				l := LayoutOf(m)
				h, err := NewAXIHost(l, "m_axi_", mem, timing, seed)
				require.NoError(t, err)
				s := &portSet{l: l}
				d := &axiHostDriver{host: h, write: write, lanes: w / 8, rng: NewRand(seed + 1), reqs: reqs, rstLeft: 2,
					rst: s.in("rst"), reqValid: s.in("s_req_valid"), reqReady: s.out("s_req_ready"), reqAddr: s.in("s_req_addr"),
					reqLen: s.in("s_req_len"), reqTag: s.in("s_req_tag")}
				if write {
					d.sData, d.sValid, d.sReady = s.in("s_axis_tdata"), s.in("s_axis_tvalid"), s.out("s_axis_tready")
					d.dValid, d.dErr, d.dReady = s.out("m_done_valid"), s.out("m_done_err"), s.in("m_done_ready")
				} else {
					d.oData, d.oKeep, d.oValid, d.oLast = s.out("m_axis_tdata"), s.out("m_axis_tkeep"), s.out("m_axis_tvalid"), s.out("m_axis_tlast")
					d.oReady, d.oErr = s.in("m_axis_tready"), s.out("m_axis_tuser_err")
				}
				require.NoError(t, s.err)
				st, err := RunRTL(m, d, 3_000_000, func() bool { return d.err != nil || d.done == len(reqs) && h.Idle() })
				require.NoError(t, err)
				require.NoError(t, d.err, "seed %d", seed)
				require.Equal(t, len(reqs), d.done, "seed %d: requests completed in %d cycles", seed, st.Cycles)
				faulted := 0
				for _, q := range reqs {
					if q.err {
						faulted++
					}
				}
				assert.GreaterOrEqual(t, len(h.Faults), faulted, "refused accesses recorded")
				for _, f := range h.Faults {
					assert.Equal(t, write, f.Write)
					assert.True(t, mem.refused(f.Addr, f.Len), "fault at %#x+%d is in the window", f.Addr, f.Len)
				}
				t.Logf("%s: %d cycles, %d read / %d write beats, %d faults", m.Name, st.Cycles, h.ReadBeats, h.WriteBeats, len(h.Faults))
			}
		})
	}
}
