package pcicard_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver/pcicard"
)

// The argument of the "pci" backend: the card's PCI address and, in a QEMU
// guest whose card test/cardserve serves, the ivshmem-doorbell device that
// carries its interrupts.
func ExampleParseArg() {
	addr, o, err := pcicard.ParseArg("0000:00:03.0,irq=0000:00:04.0")
	fmt.Println(addr, o.Interrupts, err)
	// Output: 0000:00:03.0 0000:00:04.0 <nil>
}
