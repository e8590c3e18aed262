package vfio_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/openiwarp/openiwarp/host/driver/vfio"
)

// Open a board, read a register, and give the card a DMA buffer. (Not run
// by go test: it needs a device bound to vfio-pci; test/vfio runs the same
// steps in a QEMU guest.)
func ExampleOpen() {
	dev, err := vfio.Open("0000:03:00.0")
	if errors.Is(err, vfio.ErrNotBoundToVFIO) {
		log.Fatal(err) // the message carries the commands that bind it
	}
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	if err := dev.EnableBusMaster(); err != nil {
		log.Fatal(err)
	}
	bar, err := dev.MapBAR(0)
	if err != nil {
		log.Fatal(err)
	}
	id, err := bar.Reg32(0x00)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("id %#x\n", id.Load())

	ring, err := dev.AllocDMA(64<<10, vfio.IOVALimit(1<<32)) // a 32-bit DMA engine
	if err != nil {
		log.Fatal(err)
	}
	defer ring.Free()
	_ = bar.Write64(0x100, ring.IOVA()) // tell the card where the ring is

	irqs, err := dev.EnableInterrupts(vfio.MSI, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer irqs.Close()
	for ev := range irqs.C() {
		fmt.Println("vector", ev.Vector, "fired", ev.Count, "times")
	}
}

func ExampleParseAddress() {
	a, err := vfio.ParseAddress("03:00.0")
	fmt.Println(a, err)
	_, err = vfio.ParseAddress("0000:03:20.0")
	fmt.Println(errors.Is(err, vfio.ErrBadAddress))
	// Output:
	// 0000:03:00.0 <nil>
	// true
}
