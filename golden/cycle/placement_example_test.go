package cycle_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// One RDMA Write through the 64-bit placement engine's model: the host
// block writes it makes, and the Terminate a wrong key raises instead.
func ExamplePlacement() {
	m, err := cycle.NewPlacement(64, 16, 16)
	if err != nil {
		fmt.Println(err)
		return
	}
	step := func(in cycle.PlacementIn) cycle.PlacementOut {
		in.DMAReady, in.HostReady, in.TermReady = true, true, true
		if in.Data == nil {
			in.Data = make([]byte, 8)
		}
		o := m.Step(in)
		if o.DMAValid {
			fmt.Printf("DMA write %#x strobes %08b data % x\n", o.DMAAddr, o.DMAStrb, o.DMAData)
		}
		if o.TermValid {
			fmt.Println("Terminate:", o.TermCause)
		}
		return o
	}
	step(cycle.PlacementIn{Reset: true})
	for !step(cycle.PlacementIn{}).InitDone { // the reset sweep clears the valid bits
	}
	step(cycle.PlacementIn{Cmd: cycle.PlacementCmd{Kind: cycle.CmdCommit, Index: 5, Entry: cycle.PlacementEntry{
		Entry: mem.Entry{Valid: true, Key: 0x11, PD: 1, Base: 0, Length: 64, Access: mem.RemoteWrite}, Addr: 0x2000}}})
	send := func(stag mem.STag) {
		u := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
			STag: uint32(stag), TO: 6}.Append(nil)
		u = append(u, "hello, world"...)
		for off := 0; off < len(u); {
			beat := make([]byte, 8)
			n := copy(beat, u[off:])
			if step(cycle.PlacementIn{Data: beat, Keep: 1<<n - 1, Valid: true, Last: off+n == len(u), Len: uint16(len(u)), PD: 1, QP: 3, Rev: true}).SReady {
				off += n
			}
		}
		for i := 0; i < 6; i++ {
			step(cycle.PlacementIn{})
		}
	}
	send(mem.MakeSTag(5, 0x11))
	send(mem.MakeSTag(5, 0x12))
	// Output:
	// DMA write 0x2000 strobes 11000000 data 00 00 00 00 00 00 68 65
	// DMA write 0x2008 strobes 11111111 data 6c 6c 6f 2c 20 77 6f 72
	// DMA write 0x2010 strobes 00000011 data 6c 64 00 00 00 00 00 00
	// Terminate: DDP Tagged Buffer Error: Invalid STag (1/1/0x00)
}
