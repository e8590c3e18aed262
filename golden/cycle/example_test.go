package cycle_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
)

// Stream one 9-byte frame into the 64-bit CRC32c block model and wait for
// its result.
func ExampleCRC32C() {
	m, err := cycle.NewCRC32C(64)
	if err != nil {
		fmt.Println(err)
		return
	}
	frame := []byte("123456789")
	m.Step(cycle.CRC32CIn{Data: frame[:8], Keep: 0xFF, Valid: true, MReady: true})
	beat := make([]byte, 8)
	copy(beat, frame[8:])
	m.Step(cycle.CRC32CIn{Data: beat, Keep: 0x01, Valid: true, Last: true, MReady: true})
	for c := 1; ; c++ {
		o := m.Step(cycle.CRC32CIn{Data: beat, MReady: true})
		if o.MValid {
			fmt.Printf("after %d cycles: CRC %08x, residue ok %v\n", c, o.CRC, o.ResidueOK)
			return
		}
	}
	// Output: after 4 cycles: CRC e3069283, residue ok false
}
