package selftest_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/fpga/selftest"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// The first report line the iCE40-HX8K self-test prints.
func ExampleModel_Lines() {
	lines, err := selftest.New(gen.SelftestHX8K).Lines(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", lines[0])
	// Output: "ep 00000400 ok 000017BE crc 00000100 mrk 00000100 bad 00000000\r\n"
}
