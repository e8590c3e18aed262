package guest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/openiwarp/openiwarp/test/guest"
)

// A guest on a private bridge runs a command and powers off. (Not run by
// go test: it needs root, QEMU and about 5 s; TestBootNetworkShare runs the
// same steps.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k, err := guest.FetchKernel(ctx, guest.KernelOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	initrd, err := guest.Image{Kernel: k, Binaries: []string{"/usr/bin/rping"}}.Build(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, err := guest.NewNetwork(ctx, "198.18.0.1/24")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()
	vm, err := guest.Boot(ctx, guest.Config{Kernel: k, Initrd: initrd, Net: n, Addr: "198.18.0.2/24"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vm.Close()
	res, err := vm.Shell(ctx, "ip -4 addr show eth0")
	fmt.Printf("%s %v\n", res.Output, err)
	_ = vm.Shutdown(ctx)
}
