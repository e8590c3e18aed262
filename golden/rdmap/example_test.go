package rdmap_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Decode a Terminate the way a dissector does: rdmap.Parse on the ULPDU.
func ExampleParse() {
	failing := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: 0x43, QN: 9, MSN: 1}.Append(nil)
	term := rdmap.Terminate{Cause: rdmap.DDPInvalidQN, M: true, D: true, SegLen: 18, DDPHeader: failing}
	ulpdu := term.AppendMessage(nil, rdmap.Version1, ddp.Version1, 1)

	m, err := rdmap.Parse(ulpdu)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Opcode())
	fmt.Println(m.Terminate.Cause)
	fmt.Println("copied QN:", ddp.Untagged(m.Terminate.DDPHeader).QN())
	// Output:
	// Terminate
	// DDP Untagged Buffer Error: Invalid QN (1/2/0x01)
	// copied QN: 9
}
