package rping_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
)

// The buffer advertisement rping sends, and the data of its first cycle.
func Example() {
	adv := rping.Info{Addr: 0x7f1000000000, RKey: 0x1a2b3c4d, Size: 64}
	fmt.Printf("% x\n", adv.Append(nil))
	fmt.Println(rping.ExpectedLine(0, 40))
	// Output:
	// 00 00 7f 10 00 00 00 00 1a 2b 3c 4d 00 00 00 40
	// rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ
}
