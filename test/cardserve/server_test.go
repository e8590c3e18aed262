package cardserve_test

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
	"github.com/openiwarp/openiwarp/test/cardserve"
	"github.com/openiwarp/openiwarp/test/cardserve/slotcheck"
)

// reports collects what the Server reported.
type reports struct {
	mu   sync.Mutex
	errs []error
}

func (r *reports) add(err error) { r.mu.Lock(); r.errs = append(r.errs, err); r.mu.Unlock() }
func (r *reports) all() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func newServer(t testing.TB) (*cardserve.Server, *reports) {
	r := &reports{}
	s, err := cardserve.New(cardserve.Config{Card: cardserve.Model(64), Report: r.add})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, r
}

var cardID = uint32(cardspec.DeviceID)<<cardspec.IDDeviceShift | uint32(cardspec.VendorID)<<cardspec.IDVendorShift

// The configuration header, probed as QEMU's proxy probes it at start and
// programmed as firmware does.
func TestConfigHeader(t *testing.T) {
	s, _ := newServer(t)
	q := newFakeQEMU(t, s, true)
	assert.EqualValues(t, cardspec.VendorID, q.cfgRead(0x00, 2))
	assert.EqualValues(t, cardspec.DeviceID, q.cfgRead(0x02, 2))
	assert.EqualValues(t, cardspec.DeviceID<<16|cardspec.VendorID, q.cfgRead(0x00, 4))
	assert.EqualValues(t, cardserve.Class>>8, q.cfgRead(0x0a, 2), "class: network controller, other")
	assert.EqualValues(t, cardspec.DeviceID, q.cfgRead(0x2e, 2), "subsystem ID")
	assert.Zero(t, q.cfgRead(0x0e, 1), "header type 0, one function")
	assert.Zero(t, q.cfgRead(0x06, 2)&0x10, "no capability list")
	assert.Zero(t, q.cfgRead(0x3d, 1), "no INTx pin")
	// QEMU's probe_pci_info: each of the 7 BAR slots read, all ones
	// written, read back, the original restored.
	sizes := map[uint32]uint32{}
	for off := uint32(0x10); off <= 0x28; off += 4 {
		orig := q.cfgRead(off, 4)
		q.cfgWrite(off, 0xffffffff, 4)
		v := q.cfgRead(off, 4)
		q.cfgWrite(off, orig, 4)
		if v != 0 {
			sizes[off] = ^(v &^ 0xf) + 1
			assert.Zero(t, v&0xf, "BAR at %#x: 32-bit memory, not prefetchable", off)
		}
	}
	assert.Equal(t, map[uint32]uint32{0x10: cardserve.BARSize}, sizes, "one BAR0 of the card's size")
	assert.EqualValues(t, fakeBAR, q.cfgRead(0x10, 4), "BAR0 as firmware set it")
	q.cfgWrite(0x04, 0xffff, 2)
	assert.EqualValues(t, 0x0546, q.cfgRead(0x04, 2), "command: memory, master, parity, SERR, INTx disable; no I/O space")
	q.cfgWrite(0x00, 0, 4)
	assert.EqualValues(t, cardID, q.cfgRead(0x00, 4), "IDs are read only")
	assert.Zero(t, q.cfgRead(0xfc, 4))
	assert.Zero(t, q.cfgRead(0x100, 4), "beyond the header")
}

// BAR0 accesses reach the card's registers, with the side effects of
// each access done before QEMU gets its answer.
func TestRegisters(t *testing.T) {
	s, rep := newServer(t)
	q := newFakeQEMU(t, s, true)
	assert.EqualValues(t, cardID, q.barRead(cardspec.ID, 4))
	assert.EqualValues(t, cardspec.InterfaceVersion, q.barRead(cardspec.Version, 4))
	q.barWrite(cardspec.Scratch, 0x5a5aa5a5, 4)
	assert.EqualValues(t, 0x5a5aa5a5, q.barRead(cardspec.Scratch, 4))
	assert.EqualValues(t, 0x5a5a, q.barRead(cardspec.Scratch+2, 2), "a 2-byte read: the register's upper half")
	assert.EqualValues(t, 0xa5, q.barRead(cardspec.Scratch+1, 1))
	assert.EqualValues(t, uint64(cardspec.InterfaceVersion)<<32|uint64(cardID), q.barRead(cardspec.ID, 8), "8 bytes: two registers, low first")
	q.barWrite(cardspec.EQBaseLo, 0x1234_5000_0000_4000, 8)
	assert.EqualValues(t, 0x4000, q.barRead(cardspec.EQBaseLo, 4))
	assert.EqualValues(t, 0x12345000, q.barRead(cardspec.EQBaseHi, 4))
	before := s.Stats().BARErrors

	q.barWrite(cardspec.Scratch, 0xffff, 2)
	assert.EqualValues(t, 0x5a5aa5a5, q.barRead(cardspec.Scratch, 4), "a 2-byte write is refused")
	assert.ErrorContains(t, s.LastError(), "32-bit writes")
	assert.EqualValues(t, ^uint64(0), q.barRead(cardspec.Scratch+2, 4), "a misaligned read gets an error response: all ones")
	assert.ErrorIs(t, s.LastError(), cardmodel.ErrMisaligned)
	assert.EqualValues(t, ^uint64(0), q.call(5, barMsg(fakeBAR+cardserve.BARSize, 0, 4)), "past BAR0")
	assert.ErrorContains(t, s.LastError(), "outside BAR0")
	assert.EqualValues(t, before+3, s.Stats().BARErrors)
	assert.Len(t, rep.all(), 3)
}

// DEVICE_RESET gives a fresh card and clears what QEMU clears in its copy
// of the header.
func TestReset(t *testing.T) {
	s, _ := newServer(t)
	q := newFakeQEMU(t, s, true)
	q.barWrite(cardspec.Scratch, 7, 4)
	require.EqualValues(t, 7, q.barRead(cardspec.Scratch, 4))
	require.Zero(t, q.call(7, nil))
	assert.Zero(t, q.cfgRead(0x04, 2), "command cleared")
	assert.Zero(t, q.cfgRead(0x10, 4), "BAR0 cleared")
	q.cfgWrite(0x10, fakeBAR, 4)
	q.cfgWrite(0x04, 0x06, 2)
	assert.Zero(t, q.barRead(cardspec.Scratch, 4), "a fresh card")
	assert.EqualValues(t, 1, s.Stats().Resets)
}

// A message QEMU never sends ends the connection with ErrProtocol.
func TestProtocolErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmd     int32
		payload []byte
		want    string
	}{
		{"unknown command", 9, nil, "unknown command 9"},
		{"short BAR read", 5, make([]byte, 8), "BAR_READ with a 8-byte payload, want 24"},
		{"config read of 3 bytes", 3, cfgMsg(0, 0, 3), "PCI_CFGREAD of 3 bytes"},
		{"unasked RET", 1, make([]byte, 8), "RET nobody asked for"},
		{"I/O space", 5, make([]byte, 24), "I/O-space access"},
		{"huge payload", 4, make([]byte, 400), "400-byte payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newServer(t)
			theirs, ours, err := cardserve.ProxySocket()
			require.NoError(t, err)
			defer ours.Close()
			c, err := net.FileConn(theirs)
			require.NoError(t, err)
			theirs.Close()
			defer c.Close()
			q := &fakeQEMU{t: t, c: c.(*net.UnixConn)}
			q.send(tc.cmd, tc.payload)
			err = s.ServeProxy(ours)
			require.ErrorIs(t, err, cardserve.ErrProtocol)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// fakeCards hands the registry the driver over a fake QEMU's card.
var fakeCards sync.Map // name -> *fakePhys

func init() {
	driver.Register("cardserve-fake", func(name, arg string) (driver.Card, error) {
		p, ok := fakeCards.Load(arg)
		if !ok {
			return nil, fmt.Errorf("%w: no fake card %q", driver.ErrInvalid, arg)
		}
		// The watchdog as the guest's (test/vfio/edu): an RTL card that
		// never ends a QP is reported within it.
		return rnic.Open(p.(*fakePhys), rnic.Options{Name: name, Kind: "cardserve-fake", Watchdog: 10 * time.Second})
	})
}

var fakeSeq atomic.Int64

// openFake opens the driver over a card served through a fake QEMU.
func openFake(t testing.TB, p *fakePhys) *verbs.Context {
	name := fmt.Sprint(fakeSeq.Add(1))
	fakeCards.Store(name, p)
	dev, err := verbs.Open("cardserve-fake:" + name)
	require.NoError(t, err)
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { dev.Close(); close(done) }()
		testwatch.Done(t, done, "closing the card")
	})
	return dev
}

// The card's one driver over the served card: rings in guest RAM above
// 4 GiB, buffers below, every register access a proxy message, interrupts
// through ivshmem; two QPs of the card connected over 127.0.0.1 move
// Sends, Writes and Reads, every byte checked.
func TestDriverOverProxy(t *testing.T) {
	s, rep := newServer(t)
	q := newFakeQEMU(t, s, false)
	p := newFakePhys(q)
	dev := openFake(t, p)
	ctx := testwatch.Context(t, "loopback traffic through the proxy")
	seed := uint64(time.Now().UnixNano())
	f := slotcheck.Loopback(t, ctx, dev, p.ramBuf, 256<<10, []int{1, 63, 4096, 65537, 256 << 10}, 200, seed)
	st := s.Stats()
	t.Logf("%v; %+v", f, st)
	assert.Empty(t, rep.all(), "nothing to report")
	assert.NotZero(t, st.Interrupts, "interrupts through ivshmem")
	assert.Zero(t, st.InterruptsLost)
	assert.Zero(t, st.DMARefused)
	assert.NotZero(t, st.DMAWriteBytes)
}

// A DMA of the card outside guest RAM is refused (the card sees an error
// response and reports a DMA fault) and reported with its address.
func TestDMAOutsideRAM(t *testing.T) {
	s, rep := newServer(t)
	q := newFakeQEMU(t, s, false)
	p := newFakePhys(q)
	dev := openFake(t, p)
	ctx := testwatch.Context(t, "a Send from a region outside guest RAM")
	a, _ := slotcheck.Pair(t, ctx, dev, p.ramBuf, 4096)
	// A region the driver believes is at a guest-physical address in the
	// hole below 4 GiB.
	buf := p.ramBuf(4096)
	p.poison(buf)
	mr, err := a.PD.RegMR(buf, verbs.AccessLocalWrite)
	require.NoError(t, err)
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Signaled: true, SGL: []verbs.SGE{mr.SGE(0, 100)}}))
	wc, err := a.CQ.Wait(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, verbs.WCSuccess.String(), wc.Status.String(), "the Send whose payload the card could not read")
	var de *cardserve.DMAError
	require.ErrorAs(t, s.LastError(), &de)
	assert.False(t, de.Write)
	assert.Equal(t, uint64(fakeHole), de.Addr)
	assert.ErrorIs(t, de, cardserve.ErrOutsideRAM)
	assert.NotEmpty(t, rep.all())
	assert.NotZero(t, s.Stats().DMARefused)
	lo, hi := q.barRead(cardspec.DMAFaultAddrLo, 4), q.barRead(cardspec.DMAFaultAddrHi, 4)
	assert.Equal(t, de.Addr, hi<<32|lo, "the card's DMA_FAULT_ADDR")
	t.Logf("completion %v; reported: %v", wc.Status, de)
}

// BenchmarkRegisterRead is one BAR0 read through the proxy protocol over
// a socketpair on the host: the floor under a guest's MMIO read, which
// adds QEMU's exit from TCG code and its vCPU wake-up.
func BenchmarkRegisterRead(b *testing.B) {
	s, _ := newServer(b)
	q := newFakeQEMU(b, s, true)
	for b.Loop() {
		q.barRead(cardspec.Scratch, 4)
	}
}

// BenchmarkRegisterWrite is one BAR0 write, as BenchmarkRegisterRead.
func BenchmarkRegisterWrite(b *testing.B) {
	s, _ := newServer(b)
	q := newFakeQEMU(b, s, true)
	for b.Loop() {
		q.barWrite(cardspec.Scratch, 1, 4)
	}
}
