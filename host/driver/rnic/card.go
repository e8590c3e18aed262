package rnic

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
)

// Options tune the driver. Zero values take the defaults.
type Options struct {
	Name   string // Info.Name (the registry name)
	Kind   string // Info.Kind (the backend: "model", "sim", "vfio")
	Detail string // Info.Detail (default: the backend's Describe)
	// EQLog is log2 of the event queue's entries (default 12).
	EQLog int
	// StreamLog is log2 of the bytes of each QP's transmit and receive
	// stream rings (default 20: 1 MiB each way, sixteen of the largest
	// FPDUs; clamped to the card's CAPS_RING). The bridge moves the rings
	// to and from the socket in system calls of up to a ring: with 256 KiB
	// rings the host paid more CPU per MiB (more, smaller reads and
	// writes, and a doorbell and a wake-up each; docs/driver.md).
	StreamLog int
	// Watchdog bounds how long the card may make no progress on something
	// the driver asked (INIT_DONE after a reset, a posted WQE, a command)
	// before the driver gives up on it with a *StuckError (default 60 s:
	// generous, so that a loaded machine never trips it).
	Watchdog time.Duration
	// Linger bounds how long a graceful Close waits for the peer to end
	// its stream after ours has ended (default 2 s, as golden/iwarp).
	Linger time.Duration
	// PBLDepth is the card's page-list slots (default 4096, the placement
	// engine's; the register map does not report it).
	PBLDepth int
}

func (o *Options) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.EQLog, 12)
	def(&o.StreamLog, 20)
	def(&o.PBLDepth, 4096)
	if o.Watchdog <= 0 {
		o.Watchdog = 60 * time.Second
	}
	if o.Linger <= 0 {
		o.Linger = 2 * time.Second
	}
	if o.Kind == "" {
		o.Kind = "card"
	}
	if o.Name == "" {
		o.Name = o.Kind
	}
}

// Caps are the card's capabilities, from its CAPS_* registers.
type Caps struct {
	Version         uint32 // VERSION
	WidthBytes      int    // data path width
	MaxSGE          int
	MaxWQEBBs       int
	MaxRd           int // ORD and IRD limit
	QPs, CQs, STags int // object counts (QP numbers 1..QPs-1)
	MaxQueue        int // deepest SQ, RQ (basic blocks), CQ or EQ
	MaxInline       int
	PushInline      int
	MinRingLog      int
	MaxRingLog      int
}

// Card is the openiwarp card driven through a driver.Phys: it implements
// driver.Card. Every method is safe for concurrent use.
type Card struct {
	phys driver.Phys
	regs driver.Regs
	opt  Options
	caps Caps

	tab  *mem.Table          // the host mirror of the card's STag table
	prog *stagtab.Programmer // writes the card's table

	cmdMu  sync.Mutex // the staging registers of CQ_CMD and QP_CMD, cmdSeq
	cmdSeq uint16     // commands written since RESET (CMD_STATUS.SEQ once decided)

	eqMu   sync.Mutex // the event queue's consumer: eqCI, dispatch
	eq     ring
	eqCI   uint32 // events consumed
	qpstat ring   // the QP status table

	qps [cs.MaxQP]atomic.Pointer[qp] // by QP number
	cqs [cs.MaxCQ]atomic.Pointer[cq] // by CQ number

	events  chan driver.Event
	dropped atomic.Uint64

	mu      sync.Mutex
	closed  bool
	fatal   error // the card stopped: every new object fails with it
	nextQPN uint32
	nextCQN uint32
	mrs     map[*mem.MR]*cardMR
	live    sync.WaitGroup // QP reapers

	stop     context.CancelFunc
	loopDone chan struct{}
	dogDone  chan struct{}

	// announced: the backend announces completions (driver.Announcer), so
	// a Wait sleeps without arming its CQ.
	announced bool
	waitMu    sync.Mutex
	waiting   []*cq // the CQs with a Wait asleep (announced cards only)
}

// cardMR is a registered region: its mapping, kept while the card may use it.
type cardMR struct {
	m   driver.Mapping
	buf []byte
}

// ring is DMA memory aligned to its size.
type ring struct {
	b    []byte
	iova uint64
	raw  *driver.Buffer
}

// OpenBackend is Open as a registry backend does it for a phys it
// opened: opt.Name and opt.Kind default to name and kind, and phys is
// closed if the driver cannot open.
func OpenBackend(phys driver.Phys, name, kind string, opt Options) (*Card, error) {
	if opt.Name == "" {
		opt.Name = name
	}
	if opt.Kind == "" {
		opt.Kind = kind
	}
	c, err := Open(phys, opt)
	if err != nil {
		return nil, errors.Join(err, phys.Close())
	}
	return c, nil
}

// Open drives the card behind phys: it identifies it (ID, VERSION and CAPS
// registers), resets it, waits for INIT_DONE, sets up the event queue and
// the QP status table, and enables it. On failure the card is left reset
// and phys is not closed.
func Open(phys driver.Phys, opt Options) (*Card, error) {
	opt.defaults()
	if opt.Detail == "" {
		opt.Detail = "openiwarp driver (host/driver/rnic) over " + phys.Describe()
	}
	c := &Card{phys: phys, regs: phys.Regs(), opt: opt, tab: mem.NewTable(), events: make(chan driver.Event, 256),
		nextQPN: 1, mrs: map[*mem.MR]*cardMR{}}
	if err := c.identify(); err != nil {
		return nil, err
	}
	if err := c.reset(); err != nil {
		return nil, err
	}
	if err := c.setup(); err != nil {
		c.regs.Write32(cs.Reset, 1)
		c.freeRing(&c.eq)
		c.freeRing(&c.qpstat)
		return nil, err
	}
	if a, ok := phys.(driver.Announcer); ok {
		c.announced = true
		a.OnCompletions(c.announce)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop, c.loopDone, c.dogDone = cancel, make(chan struct{}), make(chan struct{})
	go c.eventLoop(ctx)
	go c.watchdog(ctx)
	if ch, ok := phys.(driver.Checker); ok {
		ch.OnMismatch(c.mismatch)
	}
	return c, nil
}

// mismatch is what a checked card's backend calls when the card did
// something its reference did not (driver.Checker): the QP, or with qpn 0
// the card, ends with err, without waiting for the card to confirm or
// flush what it got wrong. It does not block the caller.
func (c *Card) mismatch(qpn uint32, err error) {
	go func() {
		if qpn == 0 {
			c.stopCard(err)
			return
		}
		if q := c.qp(qpn); q != nil {
			q.abandon(err)
			return
		}
		c.post(driver.Event{Type: driver.EventQPFatal, QPN: qpn, Err: err})
	}()
}

func (c *Card) read(off uint32) (uint32, error) {
	v, err := c.regs.Read32(off)
	if err != nil {
		return 0, fmt.Errorf("rnic: reading register %#x: %w", off, err)
	}
	return v, nil
}

func (c *Card) write(off, v uint32) error {
	if err := c.regs.Write32(off, v); err != nil {
		return fmt.Errorf("rnic: writing register %#x: %w", off, err)
	}
	return nil
}

// identify reads ID, VERSION and the CAPS registers.
func (c *Card) identify() error {
	id, err := c.read(cs.ID)
	if err != nil {
		return err
	}
	ver, err := c.read(cs.Version)
	if err != nil {
		return err
	}
	if id != cs.DeviceID<<cs.IDDeviceShift|cs.VendorID {
		return &IdentError{ID: id, Version: ver, Kind: ErrNotCard}
	}
	// A later minor version only adds; an earlier one lacks what this
	// driver uses (minor 1: CMD_STATUS, the commands' verdicts).
	if ver>>cs.VersionMajorShift != cs.InterfaceVersion>>cs.VersionMajorShift || ver&cs.VersionMinorMask < cs.InterfaceVersion&cs.VersionMinorMask {
		return &IdentError{ID: id, Version: ver, Kind: ErrVersion}
	}
	var r [4]uint32
	for i, off := range []uint32{cs.CapsDatapath, cs.CapsObjects, cs.CapsInline, cs.CapsRing} {
		if r[i], err = c.read(off); err != nil {
			return err
		}
	}
	f := func(v uint32, shift, mask int) int { return int(v >> shift & uint32(mask)) }
	c.caps = Caps{Version: ver,
		WidthBytes: f(r[0], cs.CapsDatapathWidthBytesShift, cs.CapsDatapathWidthBytesMask),
		MaxSGE:     f(r[0], cs.CapsDatapathMaxSGEShift, cs.CapsDatapathMaxSGEMask),
		MaxWQEBBs:  f(r[0], cs.CapsDatapathMaxWQEBBSShift, cs.CapsDatapathMaxWQEBBSMask),
		MaxRd:      f(r[0], cs.CapsDatapathMaxRDShift, cs.CapsDatapathMaxRDMask),
		QPs:        1 << f(r[1], cs.CapsObjectsLogQPShift, cs.CapsObjectsLogQPMask),
		CQs:        1 << f(r[1], cs.CapsObjectsLogCQShift, cs.CapsObjectsLogCQMask),
		STags:      1 << f(r[1], cs.CapsObjectsLogSTagShift, cs.CapsObjectsLogSTagMask),
		MaxQueue:   1 << f(r[1], cs.CapsObjectsLogQueueShift, cs.CapsObjectsLogQueueMask),
		MaxInline:  f(r[2], cs.CapsInlineMaxInlineShift, cs.CapsInlineMaxInlineMask),
		PushInline: f(r[2], cs.CapsInlinePushInlineShift, cs.CapsInlinePushInlineMask),
		MinRingLog: f(r[3], cs.CapsRingMinLogShift, cs.CapsRingMinLogMask),
		MaxRingLog: f(r[3], cs.CapsRingMaxLogShift, cs.CapsRingMaxLogMask),
	}
	k := c.caps
	switch {
	case k.MaxSGE < 1 || k.MaxSGE > cs.MaxSGE, k.MaxWQEBBs < 1 || k.MaxWQEBBs > cs.MaxWQEBBs, k.MaxRd < 1,
		k.QPs < 2 || k.QPs > cs.MaxQP, k.CQs < 1 || k.CQs > cs.MaxCQ, k.STags < 2, k.MaxQueue < 2 || k.MaxQueue > 1<<cs.MaxQueueLog,
		k.MaxInline > cs.MaxInline, k.PushInline > cs.PushInline, k.MinRingLog > k.MaxRingLog, k.MaxRingLog > cs.MaxRingLog:
		return fmt.Errorf("%w: capability registers out of range: %+v", ErrNotCard, k)
	}
	c.opt.StreamLog = min(max(c.opt.StreamLog, k.MinRingLog), k.MaxRingLog)
	c.opt.EQLog = min(c.opt.EQLog, bits.Len(uint(k.MaxQueue))-1)
	return nil
}

// Caps reports the card's capabilities.
func (c *Card) Caps() Caps { return c.caps }

// initDone reads STATUS.INIT_DONE.
func (c *Card) initDone() (bool, error) {
	s, err := c.read(cs.Status)
	return s>>cs.StatusInitDoneShift&1 != 0, err
}

// reset resets the card and waits for INIT_DONE within the watchdog.
func (c *Card) reset() error {
	c.cmdMu.Lock()
	c.cmdSeq = 0 // RESET clears CMD_STATUS
	c.cmdMu.Unlock()
	if err := c.write(cs.Reset, 1); err != nil {
		return err
	}
	if err := c.poll(c.opt.Watchdog, "STATUS.INIT_DONE after RESET", c.initDone); err != nil {
		return err
	}
	return nil
}

// poll calls done with a growing pause (up to 1 ms) until it reports true,
// fails, or bound passes (a *StuckError naming what).
func (c *Card) poll(bound time.Duration, what string, done func() (bool, error)) error {
	deadline := time.Now().Add(bound)
	pause := time.Microsecond
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return &StuckError{What: what, After: bound.String()}
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// allocRing returns n bytes (a power of two) of zeroed DMA memory whose
// IOVA is aligned to n.
func (c *Card) allocRing(n int) (ring, error) {
	b, err := c.phys.DMA().Alloc(n)
	if err != nil {
		return ring{}, fmt.Errorf("rnic: allocating %d bytes of DMA memory: %w", n, err)
	}
	if b.IOVA%uint64(n) == 0 {
		return ring{b: b.Bytes[:n:n], iova: b.IOVA, raw: b}, nil
	}
	c.phys.DMA().Free(b)
	if b, err = c.phys.DMA().Alloc(2 * n); err != nil {
		return ring{}, fmt.Errorf("rnic: allocating %d bytes of DMA memory: %w", 2*n, err)
	}
	off := (uint64(n) - b.IOVA%uint64(n)) % uint64(n)
	return ring{b: b.Bytes[off : off+uint64(n) : off+uint64(n)], iova: b.IOVA + off, raw: b}, nil
}

func (c *Card) freeRing(r *ring) {
	if r.raw != nil {
		c.phys.DMA().Free(r.raw)
		*r = ring{}
	}
}

func (c *Card) write64(lo uint32, v uint64) error {
	if err := c.write(lo, uint32(v)); err != nil {
		return err
	}
	return c.write(lo+4, uint32(v>>32))
}

// setup gives the card its event queue and QP status table, programs the
// STag table's Programmer and enables the card.
func (c *Card) setup() error {
	var err error
	if c.eq, err = c.allocRing(cs.EQESize << c.opt.EQLog); err != nil {
		return err
	}
	if c.qpstat, err = c.allocRing(cs.QPStatSize * c.caps.QPs); err != nil {
		return err
	}
	for _, w := range []struct {
		off uint32
		v   uint64
		two bool
	}{
		{cs.EQBaseLo, c.eq.iova, true},
		{cs.EQCfg, uint64(c.opt.EQLog) | 1<<cs.EQCfgEnableShift, false}, // vector 0
		{cs.IRQModeration, 0, false},
		{cs.QpstatBaseLo, c.qpstat.iova, true},
	} {
		switch {
		case w.two:
			err = c.write64(w.off, w.v)
		case w.off == cs.EQCfg:
			err = c.cmd([][2]uint32{{w.off, uint32(w.v)}})
		default:
			err = c.write(w.off, uint32(w.v))
		}
		if err != nil {
			return err
		}
	}
	c.prog, err = stagtab.New(c.regs, stagtab.Config{Base: cs.PlacementWindow, TableDepth: c.caps.STags, PBLDepth: c.opt.PBLDepth, InitDone: c.initDone})
	if err != nil {
		return fmt.Errorf("rnic: STag table: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opt.Watchdog)
	defer cancel()
	if err := c.prog.Init(ctx); err != nil {
		return fmt.Errorf("rnic: STag table: %w", err)
	}
	if err := c.write(cs.Ctrl, 1<<cs.CtrlEnableShift); err != nil {
		return err
	}
	return c.write(cs.EQDB, 1<<cs.EQDBArmShift)
}

// word is an atomic view of the aligned 32-bit word at off of b.
func word(b []byte, off int) *uint32 {
	if off < 0 || off+4 > len(b) {
		panic(fmt.Sprintf("rnic: word at %d of a %d-byte record", off, len(b)))
	}
	return (*uint32)(unsafe.Pointer(&b[off]))
}

// Info describes the card.
func (c *Card) Info() driver.Info {
	k := c.caps
	return driver.Info{Name: c.opt.Name, Kind: c.opt.Kind, Detail: c.opt.Detail,
		MaxMR: k.STags - 1, MaxQP: k.QPs - 1, MaxCQE: k.MaxQueue, MaxQPWR: k.MaxQueue / k.MaxWQEBBs,
		MaxSGE: k.MaxSGE, MaxInline: k.MaxInline, MaxORD: k.MaxRd, MaxIRD: k.MaxRd,
		DroppedEvents: c.dropped.Load()}
}

// Regs is BAR0.
func (c *Card) Regs() driver.Regs { return c.regs }

// DMA is the backend's DMA memory.
func (c *Card) DMA() driver.DMA { return c.phys.DMA() }

// Events delivers asynchronous events.
func (c *Card) Events() <-chan driver.Event { return c.events }

func (c *Card) post(e driver.Event) {
	select {
	case c.events <- e:
	default:
		c.dropped.Add(1)
	}
}

// liveLocked fails once the card is closed or stopped. Called with mu held.
func (c *Card) liveLocked() error {
	switch {
	case c.closed:
		return fmt.Errorf("%w: card %s", driver.ErrClosed, c.opt.Name)
	case c.fatal != nil:
		return fmt.Errorf("rnic: card %s stopped: %w", c.opt.Name, c.fatal)
	}
	return nil
}

func (c *Card) liveErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveLocked()
}

// AllocPD creates a protection domain.
func (c *Card) AllocPD() (*mem.PD, error) {
	if err := c.liveErr(); err != nil {
		return nil, err
	}
	return c.tab.AllocPD(), nil
}

func (c *Card) ownPD(pd *mem.PD) error {
	if pd == nil || pd.Table() != c.tab {
		return fmt.Errorf("%w: protection domain is not one of card %s", driver.ErrInvalid, c.opt.Name)
	}
	return nil
}

// RegisterMR maps buf for the card (Phys.Map), registers it in the host
// mirror under an STag the card's table can hold and writes the entry
// through the placement window: contiguous or as a page list, as the
// mapping came.
func (c *Card) RegisterMR(pd *mem.PD, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error) {
	if err := c.ownPD(pd); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("rnic: registering %d bytes at tagged offset %#x", len(buf), addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.liveLocked(); err != nil {
		return nil, err
	}
	if len(c.mrs) >= c.caps.STags-1 {
		return nil, fmt.Errorf("%s: %w: the card holds %d regions", what, mem.ErrFull, len(c.mrs))
	}
	var m driver.Mapping
	tr := stagtab.Contiguous(0)
	if len(buf) > 0 {
		var err error
		if m, err = c.phys.Map(buf); err != nil {
			return nil, fmt.Errorf("%s: mapping it for DMA: %w", what, err)
		}
		if m.Contiguous() {
			tr = stagtab.Contiguous(m.IOVA)
		} else {
			tr = stagtab.Paged(m.Offset, m.Pages)
		}
	}
	unmap := func(err error) error {
		if len(buf) > 0 {
			err = errors.Join(err, c.phys.Unmap(m))
		}
		return err
	}
	mr, err := stagtab.RegisterMirror(pd, c.caps.STags, buf, addr, access, qp)
	if err != nil {
		if errors.Is(err, mem.ErrArgument) {
			err = fmt.Errorf("%w: %w", driver.ErrInvalid, err)
		}
		return nil, unmap(fmt.Errorf("%s: %w", what, err))
	}
	e, _ := c.tab.Lookup(mr.STag)
	if err := c.prog.Write(mr.STag.Index(), e, tr); err != nil {
		if errors.Is(err, stagtab.ErrLength) || errors.Is(err, stagtab.ErrPageListFull) {
			err = fmt.Errorf("%w: %w", driver.ErrInvalid, err)
		}
		return nil, unmap(errors.Join(fmt.Errorf("%s: %w", what, err), mr.Deregister()))
	}
	c.mrs[mr] = &cardMR{m: m, buf: buf}
	return mr, nil
}

// DeregisterMR invalidates the card's entry, then unmaps the buffer: a DMA
// still in flight through the old entry meets the IOVA table, not memory.
func (c *Card) DeregisterMR(mr *mem.MR) error {
	c.mu.Lock()
	r := c.mrs[mr]
	delete(c.mrs, mr)
	c.mu.Unlock()
	if mr == nil || r == nil {
		return fmt.Errorf("%w: memory region is not registered on card %s", driver.ErrInvalid, c.opt.Name)
	}
	if err := c.prog.Remove(mr.STag.Index()); err != nil {
		c.mu.Lock()
		c.mrs[mr] = r
		c.mu.Unlock()
		return fmt.Errorf("rnic: deregistering %v: %w", mr.STag, err)
	}
	err := mr.Deregister()
	if len(r.buf) > 0 {
		err = errors.Join(err, c.phys.Unmap(r.m))
	}
	if err != nil {
		return fmt.Errorf("rnic: deregistering %v: %w", mr.STag, err)
	}
	return nil
}

// cmd writes a context's staging registers then its command register,
// under cmdMu.
func (c *Card) cmd(regs [][2]uint32) error {
	c.cmdMu.Lock()
	defer c.cmdMu.Unlock()
	for _, w := range regs {
		if err := c.write(w[0], w[1]); err != nil {
			return err
		}
	}
	return c.verdictLocked(regs)
}

// verdictLocked waits for the verdict of the command written last in
// regs (a QP_CMD, CQ_CMD or EQ_CFG write): the card counts the commands it
// decides in CMD_STATUS.SEQ (a posted write is never answered), so the
// driver reads it until it reaches its own count. Called with cmdMu held.
func (c *Card) verdictLocked(regs [][2]uint32) error {
	c.cmdSeq++
	var st uint32
	err := c.poll(c.opt.Watchdog, fmt.Sprintf("CMD_STATUS.SEQ %d (a command's verdict)", c.cmdSeq), func() (bool, error) {
		var err error
		st, err = c.read(cs.CmdStatus)
		return uint16(st>>cs.CmdStatusSeqShift&cs.CmdStatusSeqMask) == c.cmdSeq, err
	})
	if err != nil || st>>cs.CmdStatusRefusedShift&cs.CmdStatusRefusedMask == 0 {
		return err
	}
	last := regs[len(regs)-1]
	e := &CommandError{Reg: last[0], Val: last[1], Why: cs.CmdWhy(st >> cs.CmdStatusWhyShift & cs.CmdStatusWhyMask)}
	for _, w := range regs {
		if w[0] == cs.QPNum && e.Reg == cs.QPCmd || w[0] == cs.CQNum && e.Reg == cs.CQCmd {
			e.Obj = w[1]
		}
	}
	return e
}

// qpCmd acts on QP qpn.
func (c *Card) qpCmd(qpn uint32, op cs.QPOp) error {
	return c.cmd([][2]uint32{{cs.QPNum, qpn}, {cs.QPCmd, uint32(op)}})
}

// Close closes every QP (their work flushes), then quiesces the card
// (reset) and stops the driver's goroutines. It does not close the Phys.
func (c *Card) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var qps []*qp
	for i := range c.qps {
		if q := c.qps[i].Load(); q != nil && q.ready {
			qps = append(qps, q) // the others close themselves (Attach)
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, q := range qps {
		wg.Add(1)
		go func() { defer wg.Done(); q.Close() }()
	}
	wg.Wait()
	c.live.Wait()
	err := c.write(cs.Reset, 1)
	c.stop()
	<-c.loopDone
	<-c.dogDone
	c.mu.Lock()
	mrs := c.mrs
	c.mrs = map[*mem.MR]*cardMR{}
	c.mu.Unlock()
	for mr, r := range mrs {
		mr.Deregister()
		if len(r.buf) > 0 {
			err = errors.Join(err, c.phys.Unmap(r.m))
		}
	}
	for i := range c.cqs {
		if q := c.cqs[i].Swap(nil); q != nil {
			q.destroy()
		}
	}
	c.eqMu.Lock()
	c.freeRing(&c.eq)
	c.eqMu.Unlock()
	c.freeRing(&c.qpstat)
	return err
}

// stopCard records that the card stopped (STATUS.FATAL, a fault on its own
// queues, a watchdog) or was found wrong (a checker's mismatch of the card
// itself): every QP ends with err and new objects fail. Such a card writes
// nothing more, or is not trusted to: no QP waits for its flush.
func (c *Card) stopCard(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	for i := range c.qps {
		if q := c.qps[i].Load(); q != nil {
			q.abandon(err)
		}
	}
	for i := range c.cqs {
		if q := c.cqs[i].Load(); q != nil {
			q.setErr(err)
		}
	}
}

// AllocMW allocates a memory window in pd's mirror under an index the
// card's table holds (the card writes the window's entry itself when a
// BIND_MW WQE binds it).
func (c *Card) AllocMW(pd *mem.PD, typ mem.Kind) (*mem.MW, error) {
	if err := c.ownPD(pd); err != nil {
		return nil, err
	}
	if err := c.liveErr(); err != nil {
		return nil, err
	}
	var drawn []*mem.MW
	defer func() {
		for _, w := range drawn {
			w.Dealloc()
		}
	}()
	for range 1 << 16 {
		mw, err := pd.AllocMW(typ)
		if err != nil {
			return nil, fmt.Errorf("rnic: allocating a memory window: %w", err)
		}
		if mw.STag.Index() < uint32(c.caps.STags) {
			return mw, nil
		}
		drawn = append(drawn, mw)
		if len(drawn) > 64 {
			drawn[0].Dealloc()
			drawn = drawn[1:]
		}
	}
	return nil, fmt.Errorf("rnic: allocating a memory window: %w: no free index below the card's table depth %d", mem.ErrFull, c.caps.STags)
}
