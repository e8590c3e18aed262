package ddp_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
)

func ExampleParse() {
	ulpdu := ddp.TaggedFields{Last: true, Version: ddp.Version1, STag: 0x1234, TO: 4096}.Append(nil)
	ulpdu = append(ulpdu, "payload"...)
	seg, err := ddp.Parse(ulpdu)
	if err != nil {
		panic(err)
	}
	h := seg.Tagged()
	fmt.Printf("%v STag=%#x TO=%d payload=%q\n", seg.Control, h.STag(), h.TO(), seg.Payload)
	// Output: TL DV=1 STag=0x1234 TO=4096 payload="payload"
}
