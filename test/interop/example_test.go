package interop_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/test/interop"
)

// A real rping -v prints each cycle's data; the harness checks it octet by
// octet against rping's own pattern.
func ExampleVerifyRpingOutput() {
	out := "ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ\n" +
		"ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\n"
	fmt.Println(interop.VerifyRpingOutput(out, "ping data: ", 2, 40))
	fmt.Println(interop.VerifyRpingOutput(out, "ping data: ", 3, 40))
	// Output:
	// <nil>
	// interop: 2 "ping data: " lines, want 3
}
