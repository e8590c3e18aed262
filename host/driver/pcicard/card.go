// Package pcicard is the "pci" backend of host/driver: the card's one
// driver (host/driver/rnic) over the card in a PCI slot, reached through
// VFIO (host/driver/vfio.OpenPhysWith). Import it for its side effect:
//
//	driver.Open("pci:0000:00:03.0")                   // the card's own MSI-X (else MSI)
//	driver.Open("pci:0000:00:03.0,irq=0000:00:04.0")  // vectors of another device
//
// The card must be bound to vfio-pci. irq= names the device whose MSI-X
// vectors are the card's (vfio.PhysOptions.Interrupts): in a QEMU guest
// whose card is served by test/cardserve, the ivshmem-doorbell device.
//
// The "vfio" backend (host/driver/vfio) is a different thing: the generic
// VFIO layer over a board, without the driver.
package pcicard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/driver/vfio"
)

// Kind is the registry name of the backend.
const Kind = "pci"

func init() {
	driver.Register(Kind, func(name, arg string) (driver.Card, error) {
		addr, o, err := ParseArg(arg)
		if err != nil {
			return nil, err
		}
		return Open(name, addr, o, rnic.Options{})
	})
}

// ParseArg splits the backend's argument ("ADDR" or "ADDR,irq=ADDR") into
// the card's PCI address and the options of vfio.OpenPhysWith. Errors wrap
// driver.ErrInvalid.
func ParseArg(arg string) (addr string, o vfio.PhysOptions, err error) {
	const usage = "pci:<PCI address of the card>[,irq=<PCI address of the device whose MSI-X vectors are the card's>]"
	fields := strings.Split(arg, ",")
	addr = fields[0]
	if addr == "" {
		return "", o, fmt.Errorf("%w: the %s card needs a PCI address: %s", driver.ErrInvalid, Kind, usage)
	}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch {
		case k == "irq" && v != "" && o.Interrupts == "":
			o.Interrupts = v
		case k == "irq" && v == "":
			return "", o, fmt.Errorf("%w: %s card option %q: irq= needs a PCI address: %s", driver.ErrInvalid, Kind, f, usage)
		case k == "irq":
			return "", o, fmt.Errorf("%w: %s card option %q: irq= given twice", driver.ErrInvalid, Kind, f)
		default:
			return "", o, fmt.Errorf("%w: %s card option %q unknown: %s", driver.ErrInvalid, Kind, f, usage)
		}
	}
	return addr, o, nil
}

// Card is the driver over the card in a slot; Close also closes the VFIO
// device.
type Card struct {
	*rnic.Card
	Phys *vfio.Phys
}

// Open opens the card at the PCI address addr through VFIO and runs the
// driver over it. opt.Kind defaults to Kind and opt.Name to name.
func Open(name, addr string, po vfio.PhysOptions, opt rnic.Options) (*Card, error) {
	p, err := vfio.OpenPhysWith(addr, po)
	if err != nil {
		return nil, err
	}
	c, err := rnic.OpenBackend(p, name, Kind, opt)
	if err != nil {
		return nil, err
	}
	return &Card{Card: c, Phys: p}, nil
}

// Close closes the driver, then the device.
func (c *Card) Close() error { return errors.Join(c.Card.Close(), c.Phys.Close()) }
