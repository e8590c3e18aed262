package rnic

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// fakePhys is a driver.Phys whose card is the test: it answers the
// identification and status registers, records every register write,
// hands out DMA memory by IOVA, and lets the test write CQEs, EQEs and
// status records where the driver put its rings, as the card would.
type fakePhys struct {
	t        testing.TB
	mu       sync.Mutex
	id, ver  uint32
	caps     [4]uint32
	initDone bool
	fatal    bool      // STATUS.FATAL
	fault    [3]uint32 // DMA_FAULT_ADDR_LO, _HI, _INFO
	last     map[uint32]uint32
	log      []regWrite
	mem      map[uint64][]byte // DMA buffers and mappings by IOVA
	next     uint64
	irq      chan struct{}
	cqs      map[uint32]cqCtx
	qps      map[uint32]map[uint32]uint32 // QP number: its staged registers at CREATE
	eqPI     uint32
	cqPI     map[uint32]uint32
	onWrite  func(off, v uint32)
	cmdSeq   uint16    // CMD_STATUS.SEQ: every QP_CMD, CQ_CMD and EQ_CFG is decided at once
	cmdWhy   cs.CmdWhy // CMD_STATUS.WHY of the last
	refuse   cs.CmdWhy // the verdict of the next command (then OK again)
	mute     bool      // commands are never decided (CMD_STATUS.SEQ stays)
}

type regWrite struct{ off, v uint32 }

type cqCtx struct {
	base uint64
	log  uint32
}

func newFake(t testing.TB) *fakePhys {
	return &fakePhys{t: t, id: cs.DeviceID<<16 | cs.VendorID, ver: cs.InterfaceVersion,
		caps: [4]uint32{
			8 | cs.MaxSGE<<8 | cs.MaxWQEBBs<<16 | cs.MaxRd<<24,
			10 | 10<<8 | 12<<16 | 16<<24,
			cs.MaxInline | cs.PushInline<<16,
			cs.MinRingLog | cs.MaxRingLog<<8,
		},
		initDone: true, last: map[uint32]uint32{}, mem: map[uint64][]byte{}, next: 1 << 32,
		irq: make(chan struct{}, 1), cqs: map[uint32]cqCtx{}, qps: map[uint32]map[uint32]uint32{}, cqPI: map[uint32]uint32{}}
}

func (f *fakePhys) Regs() driver.Regs { return fakeRegs{f} }
func (f *fakePhys) DMA() driver.DMA   { return fakeDMA{f} }
func (f *fakePhys) Vectors() int      { return 1 }
func (f *fakePhys) Describe() string  { return "a fake card in a test" }
func (f *fakePhys) Close() error      { return nil }

func (f *fakePhys) Map(buf []byte) (driver.Mapping, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	iova := f.next
	f.next += (uint64(len(buf)) + 4095) &^ 4095
	f.mem[iova] = buf
	return driver.NewMapping(iova, nil, 0, len(buf), iova), nil
}

func (f *fakePhys) Unmap(m driver.Mapping) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.mem, m.Handle().(uint64))
	return nil
}

func (f *fakePhys) WaitInterrupt(ctx context.Context, v int) error {
	select {
	case <-f.irq:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakePhys) interrupt() {
	select {
	case f.irq <- struct{}{}:
	default:
	}
}

type fakeDMA struct{ f *fakePhys }

func (d fakeDMA) Alloc(n int) (*driver.Buffer, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	// Align like a page allocator, so that the driver's alignment matters.
	iova := f.next
	f.next += (uint64(n) + 4095) &^ 4095
	b := make([]byte, n)
	f.mem[iova] = b
	return &driver.Buffer{Bytes: b, IOVA: iova}, nil
}

func (d fakeDMA) Free(b *driver.Buffer) error {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	delete(d.f.mem, b.IOVA)
	return nil
}

// at is the host memory at iova (n bytes).
func (f *fakePhys) at(iova uint64, n int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	for base, b := range f.mem {
		if iova >= base && iova+uint64(n) <= base+uint64(len(b)) {
			return b[iova-base : iova-base+uint64(n)]
		}
	}
	f.t.Fatalf("no host memory at %#x+%d", iova, n)
	return nil
}

type fakeRegs struct{ f *fakePhys }

func (r fakeRegs) Read32(off uint32) (uint32, error) {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch off {
	case cs.ID:
		return f.id, nil
	case cs.Version:
		return f.ver, nil
	case cs.CapsDatapath, cs.CapsObjects, cs.CapsInline, cs.CapsRing:
		return f.caps[(off-cs.CapsDatapath)/4], nil
	case cs.Status:
		v := uint32(0)
		if f.initDone {
			v |= 1 << cs.StatusInitDoneShift
		}
		if f.fatal {
			v |= 1 << cs.StatusFatalShift
		}
		return v, nil
	case cs.DMAFaultAddrLo, cs.DMAFaultAddrHi, cs.DMAFaultInfo:
		return f.fault[(off-cs.DMAFaultAddrLo)/4], nil
	case cs.CmdStatus:
		v := uint32(f.cmdSeq) | uint32(f.cmdWhy)<<cs.CmdStatusWhyShift
		if f.cmdWhy != cs.CmdWhyOk {
			v |= 1 << cs.CmdStatusRefusedShift
		}
		return v, nil
	}
	return f.last[off], nil
}

// lastOf is the last value written at off (for the tests, which run
// beside the driver's goroutines).
func (f *fakePhys) lastOf(off uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[off]
}

func (r fakeRegs) Write32(off, v uint32) error {
	f := r.f
	f.mu.Lock()
	f.last[off] = v
	f.log = append(f.log, regWrite{off, v})
	switch off {
	case cs.Reset:
		f.cmdSeq, f.cmdWhy = 0, cs.CmdWhyOk
	case cs.QPCmd, cs.CQCmd, cs.EQCfg:
		if f.mute {
			f.mu.Unlock()
			return nil
		}
		f.cmdSeq++
		f.cmdWhy, f.refuse = f.refuse, cs.CmdWhyOk
		if f.cmdWhy != cs.CmdWhyOk {
			f.mu.Unlock()
			return nil // refused: nothing changes
		}
	}
	switch off {
	case cs.CQCmd:
		if v == uint32(cs.CQOpCreate) {
			f.cqs[f.last[cs.CQNum]] = cqCtx{base: uint64(f.last[cs.CQBaseHi])<<32 | uint64(f.last[cs.CQBaseLo]), log: f.last[cs.CQCfg]}
		}
	case cs.QPCmd:
		if v == uint32(cs.QPOpCreate) {
			ctx := map[uint32]uint32{}
			for o := uint32(cs.QPNum); o < cs.QPCmd; o += 4 {
				ctx[o] = f.last[o]
			}
			f.qps[f.last[cs.QPNum]] = ctx
		}
	}
	hook := f.onWrite
	f.mu.Unlock()
	if hook != nil {
		hook(off, v)
	}
	return nil
}

func (r fakeRegs) Read64(off uint32) (uint64, error) {
	lo, _ := r.Read32(off)
	hi, err := r.Read32(off + 4)
	return uint64(hi)<<32 | uint64(lo), err
}

func (r fakeRegs) Write64(off uint32, v uint64) error {
	r.Write32(off, uint32(v))
	return r.Write32(off+4, uint32(v>>32))
}

// writes returns the values written to off, in order.
func (f *fakePhys) writes(off uint32) []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var v []uint32
	for _, w := range f.log {
		if w.off == off {
			v = append(v, w.v)
		}
	}
	return v
}

// store writes a record as the card does: ascending words, each atomic.
func store(dst, rec []byte) {
	for i := 0; i < len(rec); i += 4 {
		atomic.StoreUint32(word(dst, i), binary.LittleEndian.Uint32(rec[i:]))
	}
}

// eqe writes the next event and raises the interrupt.
func (f *fakePhys) eqe(typ cs.EQEType, obj, info uint32, set func(cs.EQE)) {
	f.mu.Lock()
	base := uint64(f.last[cs.EQBaseHi])<<32 | uint64(f.last[cs.EQBaseLo])
	log := f.last[cs.EQCfg] & cs.EQCfgLogSizeMask
	pi := f.eqPI
	f.eqPI++
	f.mu.Unlock()
	n := uint32(1) << log
	var b [cs.EQESize]byte
	e := cs.EQE(b[:])
	e.SetType(typ)
	e.SetObj(obj)
	e.SetInfo(info)
	if set != nil {
		set(e)
	}
	e.SetOwner(pi/n%2 == 0)
	store(f.at(base+uint64(pi%n)*cs.EQESize, cs.EQESize), b[:])
	f.interrupt()
}

// cqe writes the next completion of CQ cqn.
func (f *fakePhys) cqe(cqn uint32, set func(cs.CQE)) {
	f.mu.Lock()
	c := f.cqs[cqn]
	pi := f.cqPI[cqn]
	f.cqPI[cqn]++
	f.mu.Unlock()
	n := uint32(1) << c.log
	var b [cs.CQESize]byte
	e := cs.CQE(b[:])
	set(e)
	e.SetOwner(pi/n%2 == 0)
	store(f.at(c.base+uint64(pi%n)*cs.CQESize, cs.CQESize), b[:])
}

// qpstat writes QP qpn's status record.
func (f *fakePhys) qpstat(qpn uint32, set func(cs.QPStat)) {
	f.mu.Lock()
	base := uint64(f.last[cs.QpstatBaseHi])<<32 | uint64(f.last[cs.QpstatBaseLo])
	f.mu.Unlock()
	dst := f.at(base+uint64(qpn)*cs.QPStatSize, cs.QPStatSize)
	var b [cs.QPStatSize]byte
	for i := 0; i < len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], atomic.LoadUint32(word(dst, i)))
	}
	set(cs.QPStat(b[:]))
	store(dst, b[:])
}

// qpRing is QP qpn's ring at the context's base register lo, of 1<<log bytes.
func (f *fakePhys) qpRing(qpn, lo uint32, size int) []byte {
	f.mu.Lock()
	ctx := f.qps[qpn]
	f.mu.Unlock()
	if ctx == nil {
		f.t.Fatalf("QP %d was not created", qpn)
	}
	return f.at(uint64(ctx[lo+4])<<32|uint64(ctx[lo]), size)
}

func (f *fakePhys) qpSizes(qpn uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.qps[qpn][cs.QPSizes]
}

func (f *fakePhys) String() string { return fmt.Sprintf("fake card %p", f) }

// hook sets the function that sees every register write after it is made.
func (f *fakePhys) hook(fn func(off, v uint32)) {
	f.mu.Lock()
	f.onWrite = fn
	f.mu.Unlock()
}

// endQP does what the card does when a QP goes to error: it takes every
// posted block (flushing), closes the transmit stream and reports
// QP_ERROR with why.
func (f *fakePhys) endQP(qpn uint32, why cs.QPErr) {
	db := cs.QPDBBase + qpn*cs.QPDBStride
	f.mu.Lock()
	sq, rq := f.last[db+cs.QPDBSQPI], f.last[db+cs.QPDBRQPI]
	f.mu.Unlock()
	f.qpstat(qpn, func(r cs.QPStat) {
		r.SetSQCI(uint16(sq))
		r.SetRQCI(uint16(rq))
		r.SetTXClosed(true)
		r.SetState(cs.QPStateError)
	})
	f.eqe(cs.EQETypeQPError, qpn, uint32(why), nil)
}
