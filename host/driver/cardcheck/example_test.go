package cardcheck_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver/cardcheck"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/simhost"
)

// host is a simulated host: memory behind an IOMMU model (simhost).
type host struct{ *simhost.Host }

func (h host) ModelReadMem(addr uint64, p []byte) error { return h.ReadMem(addr, p) }
func (h host) Reachable(addr uint64, n int) error {
	_, err := h.Lookup(addr, n)
	return err
}

// device is a second card model standing in for the RTL (hw/sim.Card in
// the sim card and in cardserve), one unit of work per cycle.
type device struct {
	*cardmodel.Card
	cycles uint64
}

func (d *device) Run(n int) (bool, error) {
	for i := 0; i < n; i++ {
		if !d.Step() {
			return i > 0, nil
		}
		d.cycles++
	}
	return true, nil
}
func (d *device) Cycles() uint64   { return d.cycles }
func (d *device) Describe() string { return "a card model standing in for the RTL" }
func (d *device) Close()           {}

// A Pair feeds the device and the model beside it the same register
// writes; Step clocks the device until it has been quiet, and the check
// reports what it found.
func Example() {
	h := host{simhost.NewHost()}
	p, err := cardcheck.New(cardcheck.Config{}, h, func(width int, bus cardcheck.Bus) (cardcheck.Device, error) {
		c, err := cardmodel.New(cardmodel.Config{Width: width, Host: bus})
		return &device{Card: c}, err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	p.OnMismatch(func(qpn uint32, err error) { fmt.Println("QP", qpn, err) })
	if err := p.Write32(cs.Scratch, 0x1234); err != nil {
		fmt.Println(err)
	}
	v, _ := p.Read32(cs.Scratch)
	for p.Step() {
	}
	fmt.Printf("SCRATCH %#x, %d disagreements\n", v, p.Counts().Mismatches)
	// Output: SCRATCH 0x1234, 0 disagreements
}
