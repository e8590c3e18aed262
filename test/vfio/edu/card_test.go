//go:build vfioguest

package edu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/driver/vfio"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
	"github.com/openiwarp/openiwarp/internal/testwatch"
	"github.com/openiwarp/openiwarp/test/cardserve/slotcheck"
)

// The card in a PCI slot (test/cardserve, host side): its proxy device
// with the card's IDs, and the ivshmem-doorbell device whose MSI-X vectors
// are the card's interrupts.
const ivshmemVendor, ivshmemDevice = 0x1af4, 0x1110

// slotPool holds the opened cards the in-guest registry hands out
// ("slot"): each verbs.Open takes one, its Close gives it back.
var slotPool = make(chan *vfio.Phys, 8)

// slotDriver is the driver over a card of the pool.
type slotDriver struct {
	*rnic.Card
	p *vfio.Phys
}

// Close closes the driver and gives the card back to the pool.
func (d slotDriver) Close() error {
	err := d.Card.Close()
	slotPool <- d.p
	return err
}

func init() {
	driver.Register("slot", func(name, arg string) (driver.Card, error) {
		var p *vfio.Phys
		select {
		case p = <-slotPool:
		default:
			return nil, fmt.Errorf("%w: every card in a slot is in use", driver.ErrInvalid)
		}
		c, err := rnic.Open(p, rnic.Options{Name: name, Kind: "vfio", Watchdog: cardWatchdog})
		if err != nil {
			slotPool <- p
			return nil, err
		}
		return slotDriver{Card: c, p: p}, nil
	})
}

// cardWatchdog bounds how long the driver waits for the card: a card that
// went away is reported within it.
const cardWatchdog = 10 * time.Second

// slotsEnv names the cards a test uses, as CARD=IVSHMEM pairs of PCI
// addresses separated by commas: the harness serves model cards and RTL
// cards in one guest and runs each test on one kind. Unset: every card in
// a slot, the n-th card's interrupts the n-th ivshmem device's vectors.
const slotsEnv = "OPENIWARP_CARD_SLOTS"

// slots lists the cards in slots and the ivshmem device of each.
func slots(t *testing.T) (cards, ivshmems []string) {
	t.Helper()
	all, allIvs := pciAddrsOf(t, cardspec.VendorID, cardspec.DeviceID), pciAddrsOf(t, ivshmemVendor, ivshmemDevice)
	require.NotEmpty(t, all, "no card in a slot")
	env := os.Getenv(slotsEnv)
	if env == "" {
		require.Len(t, allIvs, len(all), "one ivshmem device per card")
		return all, allIvs
	}
	for _, pair := range strings.Split(env, ",") {
		card, ivs, ok := strings.Cut(pair, "=")
		require.True(t, ok, "%s=%q: %q is not CARD=IVSHMEM", slotsEnv, env, pair)
		require.Contains(t, all, card, "%s names %s, not a card in a slot (cards: %v)", slotsEnv, card, all)
		require.Contains(t, allIvs, ivs, "%s names %s, not an ivshmem device (%v)", slotsEnv, ivs, allIvs)
		cards, ivshmems = append(cards, card), append(ivshmems, ivs)
	}
	return cards, ivshmems
}

// bindSlot binds a device to vfio-pci by its error's recipe, unless it is
// bound already (TestCardSlot binds the cards it proves the errors on).
func bindSlot(t *testing.T, addr string) {
	t.Helper()
	if drv, err := os.Readlink("/sys/bus/pci/devices/" + addr + "/driver"); err == nil && filepath.Base(drv) == "vfio-pci" {
		return
	}
	bindByRecipe(t, addr)
}

// openSlots opens every card through VFIO with its ivshmem device's
// vectors as its interrupts and puts them in the pool; they are closed
// when the test ends.
func openSlots(t *testing.T) []*vfio.Phys {
	t.Helper()
	cards, ivs := slots(t)
	var ps []*vfio.Phys
	for i := range cards {
		bindSlot(t, cards[i])
		bindSlot(t, ivs[i])
		p, err := vfio.OpenPhysWith(cards[i], vfio.PhysOptions{Interrupts: ivs[i]})
		require.NoError(t, err)
		ps = append(ps, p)
		slotPool <- p
	}
	t.Cleanup(func() {
		for range ps {
			select {
			case p := <-slotPool:
				p.Close()
			default: // still held by a driver the test did not close
			}
		}
	})
	return ps
}

// closeDev closes a verbs device, failing rather than hanging.
func closeDev(t *testing.T, dev *verbs.Context) error {
	done := make(chan error, 1)
	go func() { done <- dev.Close() }()
	err, _ := testwatch.Wait(t, done, "closing the card in the slot")
	return err
}

// The cards in slots run the verbs suite (messages up to 64 KiB, 2 QPs in
// ManyQPs), each end of a connection on its own card: the harness serves
// four, as many as the suite holds at once.
func TestCardVerbs(t *testing.T) {
	ps := openSlots(t)
	require.GreaterOrEqual(t, len(ps), 2, "two cards: the suite opens one device per end")
	verbstest.Run(t, "slot", verbstest.Options{MaxSize: 64 << 10, QPs: 2, Seed: uint64(seed)})
}

// A guest without an IOMMU, the card and ivshmem-doorbell in slots: the
// wrong set-ups fail with errors that say what to do; then the card's one
// driver runs through VFIO's no-IOMMU mode, interrupts through ivshmem's
// MSI-X, and two QPs of the card move data to each other over 127.0.0.1.
func TestCardSlot(t *testing.T) {
	cards, ivshmems := slots(t)
	card, ivs := cards[0], ivshmems[0]
	class, err := os.ReadFile("/sys/bus/pci/devices/" + card + "/class")
	require.NoError(t, err)
	assert.Equal(t, "0x028000", strings.TrimSpace(string(class)), "network controller, other")
	res, err := os.ReadFile("/sys/bus/pci/devices/" + card + "/resource")
	require.NoError(t, err)
	var v [3]uint64 // start, end, flags of BAR0
	for i, f := range strings.Fields(strings.SplitN(string(res), "\n", 2)[0])[:3] {
		v[i], err = strconv.ParseUint(f, 0, 64)
		require.NoError(t, err)
	}
	start, end, flags := v[0], v[1], v[2]
	assert.EqualValues(t, 1<<cardspec.AddrBits, end-start+1, "BAR0 of the card's size")
	assert.Zero(t, flags&(1<<13), "BAR0 not prefetchable")
	t.Logf("card at %s (BAR0 %#x, %d KiB), interrupts through ivshmem at %s", card, start, (end-start+1)>>10, ivs)

	// Wrong use: no-IOMMU mode off, then the card not bound to vfio-pci.
	_, err = vfio.OpenPhysWith(card, vfio.PhysOptions{Interrupts: ivs})
	require.ErrorIs(t, err, vfio.ErrNoIOMMU)
	assert.Contains(t, err.Error(), "echo 1 > "+noiommuParam)
	t.Logf("no-IOMMU mode off: %v", err)
	require.NoError(t, os.WriteFile(noiommuParam, []byte("1"), 0o644))
	_, err = vfio.OpenPhysWith(card, vfio.PhysOptions{Interrupts: ivs})
	require.ErrorIs(t, err, vfio.ErrNotBoundToVFIO)
	t.Logf("not bound: %v", err)
	bindByRecipe(t, card)
	_, err = vfio.OpenPhysWith(card, vfio.PhysOptions{Interrupts: ivs})
	require.ErrorIs(t, err, vfio.ErrNotBoundToVFIO, "the interrupt device not bound yet")
	assert.Contains(t, err.Error(), ivs)
	bindByRecipe(t, ivs)
	for i := 1; i < len(cards); i++ {
		bindByRecipe(t, cards[i])
		bindByRecipe(t, ivshmems[i])
	}

	p := openSlots(t)[0]
	dev, err := verbs.Open("slot")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile("/proc/interrupts")
			t.Logf("/proc/interrupts:\n%s", b)
		}
	})
	t.Logf("%s", p.Describe())
	assert.Contains(t, p.Describe(), "no-IOMMU")
	assert.Contains(t, p.Describe(), "MSI-X vectors of "+ivs)
	require.Equal(t, 1, p.Vectors())
	info := dev.Info()
	t.Logf("verbs device: %+v", info)

	// What one register access costs through the slot: a vCPU exit into
	// QEMU, a message to cardserve and its answer.
	regs := p.Regs()
	const n = 2000
	start0 := time.Now()
	for i := range n {
		require.NoError(t, regs.Write32(cardspec.Scratch, uint32(i)))
	}
	wr := time.Since(start0) / n
	start0 = time.Now()
	for range n {
		v, err := regs.Read32(cardspec.Scratch)
		require.NoError(t, err)
		require.EqualValues(t, n-1, v)
	}
	rd := time.Since(start0) / n
	fmt.Printf("FIGURE mmio-read-ns %d\nFIGURE mmio-write-ns %d\n", rd.Nanoseconds(), wr.Nanoseconds())

	ctx := testwatch.Context(t, "loopback traffic on the card in the slot")
	f := slotcheck.Loopback(t, ctx, dev, func(n int) []byte { return make([]byte, n) }, 64<<10,
		[]int{1, 100, 4096, 65536}, 200, uint64(seed))
	fmt.Printf("FIGURE send-ops-per-s %.0f\n", f.PerSecond())
	t.Logf("%v", f)
	require.NoError(t, closeDev(t, dev))
}

// What the path costs on the first card of the slots, for the figures the
// harness compares between the model card and the RTL card in one run:
// a register read and write (SCRATCH: a vCPU exit into QEMU, a message to
// cardserve, the card's answer), and STag programming (RegMR then Dereg
// of a 4 KiB region: staging registers and a command each, which the card
// completes) per second. The figures are named after OPENIWARP_CARD_LABEL.
func TestCardCost(t *testing.T) {
	label := os.Getenv("OPENIWARP_CARD_LABEL")
	if label == "" {
		label = "card"
	}
	p := openSlots(t)[0]
	regs := p.Regs()
	const n = 300
	began := time.Now()
	for i := range n {
		require.NoError(t, regs.Write32(cardspec.Scratch, uint32(i)))
	}
	wr := time.Since(began) / n
	began = time.Now()
	for range n {
		v, err := regs.Read32(cardspec.Scratch)
		require.NoError(t, err)
		require.EqualValues(t, n-1, v)
	}
	rd := time.Since(began) / n
	dev, err := verbs.Open("slot")
	require.NoError(t, err)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	buf := make([]byte, 4096)
	const k = 20
	began = time.Now()
	for range k {
		mr, err := pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
		require.NoError(t, err)
		require.NoError(t, mr.Dereg())
	}
	mrs := float64(k) / time.Since(began).Seconds()
	fmt.Printf("FIGURE %s-mmio-read-ns %d\nFIGURE %s-mmio-write-ns %d\nFIGURE %s-mr-ops-per-s %.0f\n", label, rd.Nanoseconds(), label, wr.Nanoseconds(), label, mrs)
	t.Logf("%s: %s", label, p.Describe())
	require.NoError(t, closeDev(t, dev))
}

// cardserve goes away while the driver has the card: BAR0 reads as all
// ones (QEMU answers a read its proxy cannot forward so), the driver's
// watchdog reports the card as not answering (*rnic.StuckError, within a
// second), every later call fails with it, and Close returns. The harness stops cardserve after "card-ready" and then creates
// /mnt/host/cardserve-gone.
func TestCardServeGone(t *testing.T) {
	p := openSlots(t)[0]
	dev, err := verbs.Open("slot")
	require.NoError(t, err)
	ctx := testwatch.Context(t, "a Send after cardserve went away")
	a, b := slotcheck.Pair(t, ctx, dev, func(n int) []byte { return make([]byte, n) }, 4096)
	fmt.Println("card-ready")
	gone := filepath.Join("/mnt/host", "cardserve-gone")
	testwatch.Until(t, "the harness to stop cardserve", func() bool {
		_, err := os.Stat(gone)
		return err == nil
	})
	began := time.Now()
	v, err := p.Regs().Read32(cardspec.ID)
	t.Logf("ID register of the first card with its cardserve gone: %#x, %v", v, err)
	require.EqualValues(t, 0xffffffff, v, "a read nobody answers")
	testwatch.Until(t, "the driver to notice", func() bool { return a.QP.Err() != nil })
	err = a.QP.Err()
	t.Logf("after %v: %v", time.Since(began).Round(time.Millisecond), err)
	var se *rnic.StuckError
	require.ErrorAs(t, err, &se, "a typed error: the card is not answering")
	assert.ErrorIs(t, err, rnic.ErrStuck)
	_, err = dev.CreateCQ(16)
	t.Logf("CreateCQ: %v", err)
	assert.ErrorIs(t, err, rnic.ErrStuck)
	began = time.Now()
	cerr := closeDev(t, dev)
	t.Logf("closing took %v (bounded, did not hang): %v", time.Since(began).Round(time.Millisecond), cerr)
	_ = b
}
