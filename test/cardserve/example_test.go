package cardserve_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"

	"github.com/openiwarp/openiwarp/test/cardserve"
)

// Serving the card's golden model to a QEMU guest: the proxy socket as
// QEMU's descriptor 3, the ivshmem server listening before QEMU starts.
func Example() {
	s, err := cardserve.New(cardserve.Config{Card: cardserve.Model(64),
		Report: func(err error) { fmt.Fprintln(os.Stderr, err) }})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: "/tmp/card-ivshmem.sock", Net: "unix"})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	go s.ServeIVShmem(l)
	theirs, ours, err := cardserve.ProxySocket()
	if err != nil {
		panic(err)
	}
	qemu := exec.Command("qemu-system-x86_64", "-M", "q35", "-accel", "tcg", "-m", "512M",
		"-object", "memory-backend-memfd,id=mem,size=512M,share=on", "-machine", "memory-backend=mem",
		"-device", "x-pci-proxy-dev,id=card0,fd=3",
		"-chardev", "socket,path=/tmp/card-ivshmem.sock,id=ivs", "-device", "ivshmem-doorbell,chardev=ivs,vectors=1" /* , kernel, disk... */)
	qemu.ExtraFiles = []*os.File{theirs}
	if err := qemu.Start(); err != nil {
		panic(err)
	}
	theirs.Close()
	go qemu.Wait()
	if err := s.ServeProxy(ours); err != nil { // until QEMU exits
		fmt.Println(err)
	}
	fmt.Printf("%+v\n", s.Stats())
}
