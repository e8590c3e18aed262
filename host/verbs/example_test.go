package verbs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/openiwarp/openiwarp/host/verbs"
)

// Two QPs on the model card, connected over TCP on 127.0.0.1: an RDMA
// Write, then a Send that tells the peer the data is there.
func Example() {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound for a stuck peer
	defer cancel()
	end := func() (*verbs.Context, *verbs.CQ, *verbs.QP, *verbs.MR) {
		ctx, _ := verbs.Open("model")
		pd, _ := ctx.AllocPD()
		cq, _ := ctx.CreateCQ(16)
		qp, _ := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq})
		mr, _ := pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		return ctx, cq, qp, mr
	}
	actx, acq, aqp, amr := end()
	defer actx.Close()
	bctx, bcq, bqp, bmr := end()
	defer bctx.Close()

	ln, _ := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{})
	defer ln.Close()
	bqp.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{bmr.SGE(32, 32)}}) // before connecting is fine
	go func() {
		req, _ := ln.Accept(c)
		req.Accept(bqp, []byte("welcome"))
	}()
	if err := verbs.Dial(c, ln.Addr().String(), aqp, verbs.ConnParam{PrivateData: []byte("hello")}); err != nil {
		fmt.Println(err)
		return
	}
	copy(amr.Bytes(), "written by RDMA")
	aqp.PostSend(
		verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{amr.SGE(0, 15)}, RemoteAddr: bmr.Addr(), RKey: bmr.RKey()},
		verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Inline: []byte("done"), Signaled: true})
	wc, _ := acq.Wait(c)
	fmt.Println("sender:", wc.Opcode, wc.Status)
	wc, _ = bcq.Wait(c)
	fmt.Println("receiver:", wc.Opcode, wc.Status, wc.ByteLen, "bytes:", string(bmr.Bytes()[32:36]))
	fmt.Println("memory:", string(bmr.Bytes()[:15]))
	fmt.Println("reply private data:", string(aqp.Params().PeerPD))
	// Output:
	// sender: SEND success
	// receiver: RECV success 4 bytes: done
	// memory: written by RDMA
	// reply private data: welcome
}

// A listener that drops a peer stalled in its MPA startup after 200 ms
// and keeps at most 8 startups half-done, reporting each failed one.
func ExampleListenConfig_startupLimits() {
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{
		StartupTimeout: 200 * time.Millisecond,
		MaxStartups:    8,
		OnStartupError: func(_ net.Addr, err error) {
			fmt.Println("startup failed, timed out:", errors.Is(err, os.ErrDeadlineExceeded))
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	c, _ := net.Dial("tcp", ln.Addr().String())
	defer c.Close()
	c.Write([]byte("MPA ID Req")) // half a Request, then silence
	io.ReadAll(c)                 // returns once the listener has closed it
	for ln.Stats().InStartup > 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("timed out: %d\n", ln.Stats().TimedOut)
	// Output:
	// startup failed, timed out: true
	// timed out: 1
}
