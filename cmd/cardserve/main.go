// Command cardserve serves the openiwarp card to a QEMU 7.2 guest as a PCI
// device (package test/cardserve): it starts QEMU with one end of a
// socketpair as descriptor 3, for -device x-pci-proxy-dev,fd=3 (the card's
// configuration header, BAR0 and DMA into guest RAM), and is the ivshmem
// server for -device ivshmem-doorbell (the card's interrupts as MSI-X
// vectors of that device).
//
//	cardserve [-card model|rtl] [-ivshmem PATH] [-vectors N] [-width BITS] [-json] -- qemu-system-x86_64 ARGS...
//
// Guest RAM must be shared memory, or the card can reach none of it:
//
//	cardserve -ivshmem /tmp/card.sock -- qemu-system-x86_64 -M q35 -accel tcg -m 512M \
//	  -object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem \
//	  -device x-pci-proxy-dev,id=card0,fd=3 \
//	  -chardev socket,path=/tmp/card.sock,id=ivs -device ivshmem-doorbell,chardev=ivs,vectors=1 ...
//
// -card model (the default) serves the card's transaction-level golden
// model (host/driver/cardmodel); -card rtl the Verilated card top
// iwcard_w<BITS> (64 or 512, built by make hw-sim-libs, run from inside the
// repository), with the model beside it checking every DMA write. Problems
// the guest cannot see (a DMA outside guest RAM, a refused register access,
// the RTL disagreeing with the model) are reported on stderr as they
// happen. When QEMU exits, cardserve prints
// what it served (-json: one JSON object) and exits with QEMU's status; 2
// on bad usage, 1 if it could not start.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/openiwarp/openiwarp/test/cardserve"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("cardserve", flag.ContinueOnError)
	ivs := fs.String("ivshmem", "", "path of the ivshmem server socket (`PATH`, for -chardev socket,path=PATH); none: no interrupts")
	vectors := fs.Int("vectors", 1, "interrupt vectors (ivshmem-doorbell's vectors=)")
	width := fs.Int("width", 64, "the card's data path width in bits (model: 64, 128, 256, 512; rtl: 64, 512)")
	kind := fs.String("card", "model", "the card served: model (the golden model) or rtl (the Verilated card, checked by the model)")
	asJSON := fs.Bool("json", false, "print the counters as JSON when QEMU exits")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cardserve [-card model|rtl] [-ivshmem PATH] [-vectors N] [-width BITS] [-json] -- qemu-system-x86_64 ARGS...\n"+
			"QEMU gets the card's proxy socket as descriptor 3: -device x-pci-proxy-dev,fd=3\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	qemu := fs.Args()
	if len(qemu) == 0 {
		fmt.Fprintln(os.Stderr, "cardserve: no QEMU command line after --")
		fs.Usage()
		return 2
	}
	var card cardserve.NewCard
	switch *kind {
	case "model":
		card = cardserve.Model(*width)
	case "rtl":
		card = cardserve.RTL(*width)
	default:
		fmt.Fprintf(os.Stderr, "cardserve: -card %q: model or rtl\n", *kind)
		return 2
	}
	s, err := cardserve.New(cardserve.Config{Card: card, Vectors: *vectors,
		Report: func(err error) { fmt.Fprintln(os.Stderr, "cardserve:", err) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	if *ivs != "" {
		os.Remove(*ivs)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: *ivs, Net: "unix"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "cardserve:", err)
			return 1
		}
		defer l.Close()
		go s.ServeIVShmem(l)
	}
	theirs, ours, err := cardserve.ProxySocket()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command(qemu[0], qemu[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cardserve:", err)
		return 1
	}
	theirs.Close()
	served := make(chan error, 1)
	go func() { served <- s.ServeProxy(ours) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for v := range sig {
			cmd.Process.Signal(v)
		}
	}()
	werr := cmd.Wait()
	ours.Close()
	if err := <-served; err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	st := s.Stats()
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(st)
	} else {
		fmt.Fprintf(os.Stderr, "cardserve: %+v\n", st)
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode()
	}
	if werr != nil {
		fmt.Fprintln(os.Stderr, "cardserve:", werr)
		return 1
	}
	return 0
}
