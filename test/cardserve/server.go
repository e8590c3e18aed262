package cardserve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

// Config configures a Server.
type Config struct {
	// Card creates the card served (required): at start and at every PCI
	// reset. Model(64) is the card's golden model.
	Card NewCard
	// Vectors is the number of interrupt vectors offered through ivshmem
	// (default 1; it must match ivshmem-doorbell's vectors= property).
	Vectors int
	// Report, if not nil, is told every problem the guest cannot see for
	// itself: a refused DMA (*DMAError), a BAR access the card refused or
	// outside BAR0, an unmappable RAM region, an interrupt with no guest
	// to take it. It is called with the card's bus held: it must not call
	// back into the Server.
	Report func(error)
}

// Stats counts what the Server has served.
type Stats struct {
	ConfigReads, ConfigWrites uint64
	BARReads, BARWrites       uint64
	BARErrors                 uint64 // accesses the card answered with an error, or outside BAR0
	Resets                    uint64 // DEVICE_RESETs (each a fresh card)
	MemorySyncs               uint64 // SYNC_SYSMEMs
	DMAReads, DMAWrites       uint64
	DMAReadBytes              uint64
	DMAWriteBytes             uint64
	DMARefused                uint64 // DMAs outside guest RAM
	Steps                     uint64 // card work units (Card.Step that did something)
	Interrupts                uint64 // vectors raised into the guest
	InterruptsLost            uint64 // raised with no ivshmem guest connected, or a vector it did not set up
	// Check is what the model beside the card checked (an RTL card; zero
	// for the model card), summed over the cards since the start.
	Check CheckStats
}

// Server serves one card: the proxy device's socket (ServeProxy) and the
// ivshmem server socket (ServeIVShmem).
type Server struct {
	cfg Config
	ram guestRAM
	irq ivshmemPeer

	busMu sync.Mutex // the card's bus: card, pci, checked, and every Card call
	card  Card
	pci   *config
	// checked sums the checks of the cards replaced by a reset.
	checked CheckStats

	kick chan struct{}
	// accessing counts the guest's accesses waiting for or holding the
	// bus; the card's goroutine lets them go first (resume: the last one
	// is done), so an access waits at most one Step, not a run of them.
	accessing atomic.Int32
	resume    chan struct{}
	stop      chan struct{}
	done      chan struct{}

	st struct {
		cfgR, cfgW, barR, barW, barErr, resets, syncs             atomic.Uint64
		dmaR, dmaW, dmaRB, dmaWB, dmaRefused, steps, irq, irqLost atomic.Uint64
	}
	lastErr atomic.Pointer[error]
}

// New creates the card and starts the goroutine that lets it work.
func New(cfg Config) (*Server, error) {
	if cfg.Card == nil {
		return nil, errors.New("cardserve: Config.Card is required (cardserve.Model(64) is the card's golden model)")
	}
	if cfg.Vectors == 0 {
		cfg.Vectors = 1
	}
	if cfg.Vectors < 1 || cfg.Vectors > 64 {
		return nil, fmt.Errorf("cardserve: %d interrupt vectors (1 to 64)", cfg.Vectors)
	}
	s := &Server{cfg: cfg, pci: newConfig(BARSize), kick: make(chan struct{}, 1), resume: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	c, err := cfg.Card((*host)(s))
	if err != nil {
		return nil, err
	}
	s.card = c
	go s.run()
	return s, nil
}

// Stats is a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{ConfigReads: s.st.cfgR.Load(), ConfigWrites: s.st.cfgW.Load(), BARReads: s.st.barR.Load(),
		BARWrites: s.st.barW.Load(), BARErrors: s.st.barErr.Load(), Resets: s.st.resets.Load(),
		MemorySyncs: s.st.syncs.Load(), DMAReads: s.st.dmaR.Load(), DMAWrites: s.st.dmaW.Load(),
		DMAReadBytes: s.st.dmaRB.Load(), DMAWriteBytes: s.st.dmaWB.Load(), DMARefused: s.st.dmaRefused.Load(),
		Steps: s.st.steps.Load(), Interrupts: s.st.irq.Load(), InterruptsLost: s.st.irqLost.Load(), Check: s.checks()}
}

// checks is the sum of what the models beside the cards checked.
func (s *Server) checks() CheckStats {
	s.busMu.Lock()
	defer s.busMu.Unlock()
	t := s.checked
	if c, ok := s.card.(checkedCard); ok {
		t = t.add(c.Checked())
	}
	return t
}

func (a CheckStats) add(b CheckStats) CheckStats {
	return CheckStats{Cycles: a.Cycles + b.Cycles, Checked: a.Checked + b.Checked, Bytes: a.Bytes + b.Bytes,
		Loose: a.Loose + b.Loose, Mismatches: a.Mismatches + b.Mismatches}
}

// retire closes a card that was replaced or whose Server closes, keeping
// what it checked. Called with busMu held.
func (s *Server) retire(c Card) {
	if cc, ok := c.(checkedCard); ok {
		s.checked = s.checked.add(cc.Checked())
	}
	if cl, ok := c.(interface{ Close() }); ok {
		cl.Close()
	}
}

// RAM is the guest RAM QEMU has shared (from its last SYNC_SYSMEM).
func (s *Server) RAM() []Region { return s.ram.Regions() }

// LastError is the last problem reported (see Config.Report), or nil.
func (s *Server) LastError() error {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Server) report(err error) {
	s.lastErr.Store(&err)
	if s.cfg.Report != nil {
		s.cfg.Report(err)
	}
}

// Close stops the card's goroutine, drops the guest's RAM and the ivshmem
// peer. Serving goroutines end when their sockets close.
func (s *Server) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.busMu.Lock()
	if _, gone := s.card.(closedCard); !gone {
		s.retire(s.card)
		s.card = closedCard{}
	}
	s.busMu.Unlock()
	s.ram.close()
	s.irq.drop()
	return nil
}

// run steps the card whenever an access may have given it work, until it
// is idle.
func (s *Server) run() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		select {
		case <-s.kick:
		case <-s.stop:
			return
		}
		for {
			if s.accessing.Load() > 0 {
				select {
				case <-s.resume:
				case <-s.stop:
					return
				}
			}
			s.busMu.Lock()
			did := s.card.Step()
			s.busMu.Unlock()
			if !did {
				break
			}
			s.st.steps.Add(1)
			select {
			case <-s.stop:
				return
			default:
			}
		}
	}
}

// lockBus takes the bus for a guest's access, ahead of the card's
// goroutine.
func (s *Server) lockBus() {
	s.accessing.Add(1)
	s.busMu.Lock()
}

func (s *Server) unlockBus() {
	s.busMu.Unlock()
	if s.accessing.Add(-1) == 0 {
		select {
		case s.resume <- struct{}{}:
		default:
		}
	}
}

func (s *Server) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// ServeProxy serves QEMU's x-pci-proxy-dev over c (the other end of the
// socketpair whose fd QEMU got as fd=N) until QEMU closes it (nil) or sends
// something it should not (ErrProtocol). Every request is answered before
// the next is read: QEMU's vCPU waits for each BAR and config access.
func (s *Server) ServeProxy(c *net.UnixConn) error {
	l := newLink(c)
	for {
		m, err := l.recv()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return nil // QEMU went away, or the caller closed c
		}
		if err != nil {
			return err
		}
		if err := s.serve(l, m); err != nil {
			return err
		}
	}
}

// serve acts on one message and replies where QEMU waits for a reply.
func (s *Server) serve(l *link, m message) error {
	le := binary.LittleEndian
	switch m.cmd {
	case cmdSyncSysmem:
		defer m.closeFiles()
		if err := needSize(m, syncSysmemN); err != nil {
			return err
		}
		n := len(m.files)
		if n > maxFDs {
			return fmt.Errorf("%w: SYNC_SYSMEM with %d descriptors (at most %d)", ErrProtocol, n, maxFDs)
		}
		regs := make([]Region, n)
		offs := make([]int64, n)
		for i := range n {
			regs[i] = Region{GPA: le.Uint64(m.payload[8*i:]), Size: le.Uint64(m.payload[64+8*i:])}
			offs[i] = int64(le.Uint64(m.payload[128+8*i:]))
		}
		files := m.files
		m.files = nil
		s.st.syncs.Add(1)
		if err := s.ram.replace(regs, offs, files); err != nil {
			s.report(err)
		}
		return nil // SYNC_SYSMEM has no reply
	case cmdSetIRQFD:
		// INTx through irqfds works only under KVM; the card has no INTx
		// pin and interrupts through ivshmem. The eventfds are dropped.
		m.closeFiles()
		return nil
	}
	m.closeFiles()
	switch m.cmd {
	case cmdCfgRead, cmdCfgWrite:
		if err := needSize(m, cfgMsgSize); err != nil {
			return err
		}
		addr, val, n := le.Uint32(m.payload[0:]), le.Uint32(m.payload[4:]), int32(le.Uint32(m.payload[8:]))
		if n != 1 && n != 2 && n != 4 {
			return fmt.Errorf("%w: %s of %d bytes at %#x", ErrProtocol, cmdName(m.cmd), n, addr)
		}
		s.lockBus()
		var v uint32
		if m.cmd == cmdCfgRead {
			v = s.pci.read(addr, int(n))
			s.st.cfgR.Add(1)
		} else {
			s.pci.write(addr, val, int(n))
			s.st.cfgW.Add(1)
		}
		s.unlockBus()
		return l.ret(uint64(v))
	case cmdBARRead, cmdBARWrite:
		if err := needSize(m, barMsgSize); err != nil {
			return err
		}
		addr, val, n := le.Uint64(m.payload[0:]), le.Uint64(m.payload[8:]), le.Uint32(m.payload[16:])
		if m.payload[20] == 0 {
			return fmt.Errorf("%w: an I/O-space access at %#x (the card has memory BAR0 only)", ErrProtocol, addr)
		}
		if m.cmd == cmdBARRead {
			return l.ret(s.barRead(addr, n))
		}
		s.barWrite(addr, val, n)
		return l.ret(0)
	case cmdDevReset:
		if err := s.reset(); err != nil {
			return err
		}
		return l.ret(0)
	case cmdRet:
		return fmt.Errorf("%w: a RET nobody asked for", ErrProtocol)
	}
	return fmt.Errorf("%w: unknown %s (%d-byte payload)", ErrProtocol, cmdName(m.cmd), len(m.payload))
}

// inlineSteps is how many steps of the card an access runs before it
// answers QEMU and hands the rest to the card's goroutine: a doorbell's
// first FPDU or completion comes without a goroutine handoff.
const inlineSteps = 4

// afterAccess lets the card work a little in line, then wakes its
// goroutine if it still has work. An RTL card's step is a batch of clock
// cycles, too long to keep the vCPU waiting for: its goroutine does them
// all. Called with busMu held.
func (s *Server) afterAccess() {
	if _, rtl := s.card.(checkedCard); rtl {
		s.wake()
		return
	}
	for range inlineSteps {
		if !s.card.Step() {
			return
		}
		s.st.steps.Add(1)
	}
	s.wake()
}

// barOffset is the register offset of bus address addr, or false.
func (s *Server) barOffset(addr uint64, n uint32) (uint32, bool) {
	base := s.pci.bar0()
	if addr < base || addr-base+uint64(n) > BARSize || n == 0 || n > 8 {
		return 0, false
	}
	return uint32(addr - base), true
}

// barRead is one guest read of BAR0: 4 bytes are one register read, 8
// bytes two (low word first, as the card's 64-bit quantities are laid
// out), 1 or 2 bytes the register holding them (the whole register is
// read: its read side effects happen). An error response, or a misaligned
// access (which the card refuses), reads as all ones.
func (s *Server) barRead(addr uint64, n uint32) uint64 {
	s.lockBus()
	defer s.unlockBus()
	s.st.barR.Add(1)
	off, ok := s.barOffset(addr, n)
	if !ok {
		s.barError(fmt.Errorf("cardserve: a %d-byte read at bus address %#x, outside BAR0 [%#x,+%#x)", n, addr, s.pci.bar0(), BARSize))
		return ^uint64(0)
	}
	defer s.afterAccess()
	switch n {
	case 8:
		lo, err := s.card.Read32(off)
		if err != nil {
			s.barError(fmt.Errorf("cardserve: reading BAR0 %#x: %w", off, err))
			return ^uint64(0)
		}
		hi, err := s.card.Read32(off + 4)
		if err != nil {
			s.barError(fmt.Errorf("cardserve: reading BAR0 %#x: %w", off+4, err))
			return ^uint64(0)
		}
		return uint64(hi)<<32 | uint64(lo)
	case 4:
		v, err := s.card.Read32(off)
		if err != nil {
			s.barError(fmt.Errorf("cardserve: reading BAR0 %#x: %w", off, err))
			return ^uint64(0)
		}
		return uint64(v)
	case 2, 1:
		if off&3+n > 4 {
			s.barError(fmt.Errorf("cardserve: a %d-byte read of BAR0 %#x crosses a register", n, off))
			return ^uint64(0)
		}
		v, err := s.card.Read32(off &^ 3)
		if err != nil {
			s.barError(fmt.Errorf("cardserve: reading BAR0 %#x: %w", off, err))
			return ^uint64(0)
		}
		return uint64(v>>(8*(off&3))) & (1<<(8*n) - 1)
	}
	s.barError(fmt.Errorf("cardserve: a %d-byte read of BAR0 %#x (1, 2, 4 or 8)", n, off))
	return ^uint64(0)
}

// barWrite is one guest write of BAR0: 4 bytes are one register write, 8
// bytes two (low word first). The card's registers are 32 bits wide: a
// narrower write is refused and reported.
func (s *Server) barWrite(addr, v uint64, n uint32) {
	s.lockBus()
	defer s.unlockBus()
	s.st.barW.Add(1)
	off, ok := s.barOffset(addr, n)
	if !ok {
		s.barError(fmt.Errorf("cardserve: a %d-byte write of %#x at bus address %#x, outside BAR0 [%#x,+%#x)", n, v, addr, s.pci.bar0(), BARSize))
		return
	}
	defer s.afterAccess()
	switch n {
	case 8:
		if err := s.card.Write32(off, uint32(v)); err != nil {
			s.barError(fmt.Errorf("cardserve: writing %#x to BAR0 %#x: %w", uint32(v), off, err))
		}
		if err := s.card.Write32(off+4, uint32(v>>32)); err != nil {
			s.barError(fmt.Errorf("cardserve: writing %#x to BAR0 %#x: %w", uint32(v>>32), off+4, err))
		}
	case 4:
		if err := s.card.Write32(off, uint32(v)); err != nil {
			s.barError(fmt.Errorf("cardserve: writing %#x to BAR0 %#x: %w", uint32(v), off, err))
		}
	default:
		s.barError(fmt.Errorf("cardserve: a %d-byte write of %#x to BAR0 %#x refused: the card's registers take 32-bit writes", n, v, off))
	}
}

func (s *Server) barError(err error) {
	s.st.barErr.Add(1)
	s.report(err)
}

// reset is a PCI reset: a fresh card, and the configuration header's
// writable registers back to zero (as QEMU resets its own copy).
func (s *Server) reset() error {
	s.busMu.Lock()
	defer s.busMu.Unlock()
	c, err := s.cfg.Card((*host)(s))
	if err != nil {
		return fmt.Errorf("cardserve: a fresh card at reset: %w", err)
	}
	s.retire(s.card)
	s.card = c
	s.pci.write(cfgCommand, 0, 2)
	s.pci.write(cfgBAR0, 0, 4)
	s.pci.write(cfgIntLine, 0, 1)
	s.st.resets.Add(1)
	return nil
}

// host is the card's side of the bus: guest RAM and ivshmem vectors.
type host Server

func (h *host) ReadMem(addr uint64, p []byte) error {
	s := (*Server)(h)
	if err := s.ram.read(addr, p); err != nil {
		s.st.dmaRefused.Add(1)
		s.report(err)
		return err
	}
	s.st.dmaR.Add(1)
	s.st.dmaRB.Add(uint64(len(p)))
	return nil
}

func (h *host) WriteMem(addr uint64, p []byte) error {
	s := (*Server)(h)
	if err := s.ram.write(addr, p); err != nil {
		s.st.dmaRefused.Add(1)
		s.report(err)
		return err
	}
	s.st.dmaW.Add(1)
	s.st.dmaWB.Add(uint64(len(p)))
	return nil
}

func (h *host) Peek(addr uint64, p []byte) error { return (*Server)(h).ram.read(addr, p) }

func (h *host) Reachable(addr uint64, n int) error {
	return (*Server)(h).ram.access(addr, n, true, func([]byte) {})
}

func (h *host) Report(err error) { (*Server)(h).report(err) }

func (h *host) Interrupt(v int) {
	s := (*Server)(h)
	if err := s.irq.raise(v); err != nil {
		s.st.irqLost.Add(1)
		s.report(err)
		return
	}
	s.st.irq.Add(1)
}

// closedCard stands in for the card once the Server is closed: a proxy
// connection still served answers every access with an error.
type closedCard struct{}

var errClosed = errors.New("cardserve: the server is closed")

func (closedCard) Read32(uint32) (uint32, error) { return 0, errClosed }
func (closedCard) Write32(uint32, uint32) error  { return errClosed }
func (closedCard) Step() bool                    { return false }
