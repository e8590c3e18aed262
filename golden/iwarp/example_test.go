package iwarp_test

import (
	"context"
	"fmt"
	"net"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// Two endpoints over TCP on loopback: an RDMA Write into the peer's
// registered memory, then a Send to tell it the data is there.
func Example() {
	ctx := context.Background()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()

	type end struct {
		ep  *iwarp.Endpoint
		pd  *mem.PD
		cq  *iwarp.CQ
		err error
	}
	start := func(conn net.Conn, p mpa.Params, err error) end {
		if err != nil {
			return end{err: err}
		}
		pd := mem.NewTable().AllocPD()
		cq := iwarp.NewCQ(16)
		ep, err := iwarp.New(conn, p, iwarp.Config{PD: pd, SendCQ: cq, RecvCQ: cq})
		return end{ep, pd, cq, err}
	}
	srv := make(chan end, 1)
	go func() {
		c, _ := ln.Accept()
		p, err := mpa.Respond(ctx, c, mpa.Config{})
		srv <- start(c, p, err)
	}()
	c, _ := net.Dial("tcp", ln.Addr().String())
	p, err := mpa.Initiate(ctx, c, mpa.Config{})
	a := start(c, p, err)
	b := <-srv
	if a.err != nil || b.err != nil {
		panic(fmt.Sprint(a.err, b.err))
	}
	defer a.ep.Close()
	defer b.ep.Close()

	// b advertises a buffer (its STag and address) and posts a receive.
	target := make([]byte, 32)
	mr, _ := b.pd.RegisterMR(target, 0x10000, mem.RemoteWrite|mem.LocalWrite, 0)
	note := make([]byte, 8)
	nmr, _ := b.pd.RegisterMR(note, 0, mem.LocalWrite, 0)
	b.ep.PostRecv(iwarp.RecvWR{ID: 1, SGL: []iwarp.SGE{{Addr: 0, Length: 8, LKey: nmr.STag}}})

	// a writes, then sends (the Initiator speaks first: RFC 5044 §7.1.2).
	src := []byte("placed by RDMA Write")
	smr, _ := a.pd.RegisterMR(src, 0, 0, 0)
	a.ep.PostSend(
		iwarp.SendWR{ID: 1, Opcode: iwarp.WRWrite, SGL: []iwarp.SGE{{Addr: 0, Length: uint32(len(src)), LKey: smr.STag}},
			RemoteAddr: 0x10000, RKey: mr.STag},
		iwarp.SendWR{ID: 2, Opcode: iwarp.WRSend, Inline: []byte("done"), Signaled: true},
	)
	wc, _ := a.cq.Wait(ctx)
	fmt.Println("a:", wc.Opcode, wc.Status)
	wc, _ = b.cq.Wait(ctx)
	fmt.Println("b:", wc.Opcode, wc.Status, string(note[:wc.ByteLen]), string(target[:len(src)]))
	// Output:
	// a: SEND success
	// b: RECV success done placed by RDMA Write
}
