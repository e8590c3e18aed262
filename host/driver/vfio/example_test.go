package vfio_test

import (
	"context"
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

// Open the openiwarp card's physical view, map a buffer for it and wait
// for its interrupt. (Not run by go test: it needs the card bound to
// vfio-pci.)
func ExampleOpenPhys() {
	p, err := vfio.OpenPhys("0000:03:00.0")
	var ie *vfio.IdentityError
	if errors.As(err, &ie) {
		log.Fatalf("not the card: ID %#x, VERSION %#x", ie.ID, ie.Version)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println(p.Describe())
	buf := make([]byte, 1<<20)
	m, err := p.Map(buf)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Unmap(m)
	fmt.Printf("the card sees the buffer at %#x\n", m.IOVA)
	if p.Vectors() > 0 {
		if err := p.WaitInterrupt(context.Background(), 0); err != nil {
			log.Fatal(err)
		}
	}
}
