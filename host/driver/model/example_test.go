package model_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver/model"
)

// Make the golden engine's card, read its identification register,
// register a region in its STag table and look at the object count the
// card reports.
func Example() {
	card := model.New("golden")
	defer card.Close()
	id, _ := card.Regs().Read32(model.RegID)
	fmt.Printf("%s card, ID %#x\n", card.Info().Kind, id)

	pd, _ := card.AllocPD()
	mr, _ := card.RegisterMR(pd, make([]byte, 4096), 0x10000, mem.LocalWrite|mem.RemoteWrite, 0)
	n, _ := card.Regs().Read32(model.RegMRs)
	e := card.Info()
	entry, _ := pd.Table().Lookup(mr.STag)
	fmt.Println("regions:", n, "on", e.Name, "- entry covers", entry.Length, "bytes from", fmt.Sprintf("%#x", entry.Base))

	buf, _ := card.DMA().Alloc(100)
	fmt.Printf("DMA buffer of %d bytes at IOVA %#x\n", len(buf.Bytes), buf.IOVA)
	// Output:
	// golden card, ID 0x69574152
	// regions: 1 on golden - entry covers 4096 bytes from 0x10000
	// DMA buffer of 100 bytes at IOVA 0x100000000
}
