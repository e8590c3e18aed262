package mem_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
)

// The pure check a placement engine runs before writing a byte.
func ExampleCheck() {
	e := mem.Entry{Valid: true, Key: 0x42, Kind: mem.KindMR, PD: 1, Base: 0x1000, Length: 4096, Access: mem.RemoteWrite}
	req := mem.Request{STag: mem.MakeSTag(7, 0x42), PD: 1, QP: 3, TO: 0x1F00, Len: 512, Use: mem.UseRemoteWrite}
	f := mem.Check(&e, req)
	fmt.Println(f.String(), "->", f.Cause(req.Use))
	req.Use = mem.UseRemoteRead
	f = mem.Check(&e, req)
	fmt.Println(f.String(), "->", f.Cause(req.Use))
	// Output:
	// base or bounds violation -> DDP Tagged Buffer Error: Base or bounds violation (1/1/0x01)
	// access rights violation -> RDMAP Remote Protection Error: Access rights violation (0/1/0x02)
}
