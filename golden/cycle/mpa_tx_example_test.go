package cycle_test

import (
	"bytes"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// Frame one 100-octet ULPDU with the 512-bit transmit model, keeping the
// cycle's inputs and outputs in place (StepTo) as a long co-simulation does,
// and compare the FPDU it streams out with golden/mpa's.
func ExampleMPATx_StepTo() {
	m, err := cycle.NewMPATx(512)
	if err != nil {
		fmt.Println(err)
		return
	}
	ulpdu := bytes.Repeat([]byte("iWARP"), 20)
	ctx := cycle.MPATxCtx{Offset: 0x1F0, Len: len(ulpdu), Markers: true, CRC: true}
	beats := [][]byte{ulpdu[:64], append(ulpdu[64:], make([]byte, 28)...)}
	idle := make([]byte, 64)
	var in cycle.MPATxIn
	var out cycle.MPATxOut
	var fpdu []byte
	for c := 1; c < 100; c++ {
		in = cycle.MPATxIn{Data: idle, Ctx: ctx, MReady: true}
		if len(beats) > 0 {
			in.Data, in.Valid, in.Last = beats[0], true, len(beats) == 1
		}
		m.StepTo(&in, &out)
		if in.Valid && out.SReady {
			beats = beats[1:]
		}
		if !out.Valid {
			continue
		}
		for i := range out.Data {
			if out.Keep>>i&1 == 1 {
				fpdu = append(fpdu, out.Data[i])
			}
		}
		if out.Last {
			f := mpa.Framer{Markers: true, CRC: true, Offset: ctx.Offset}
			want, _ := f.AppendFPDU(nil, ulpdu)
			fmt.Printf("cycle %d: %d-octet FPDU, golden/mpa's: %v, next offset %#x\n", c, len(fpdu), bytes.Equal(fpdu, want), out.User)
			return
		}
	}
	// Output: cycle 10: 112-octet FPDU, golden/mpa's: true, next offset 0x260
}
