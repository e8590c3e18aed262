package qp_test

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
)

// printCQ is a Completer that prints each completion.
type printCQ string

func (p printCQ) CompleteSend(c qp.Completion) bool {
	fmt.Printf("%s: %v %d %v\n", p, c.Opcode, c.ID, c.Status)
	return true
}

func (p printCQ) CompleteRecv(c qp.Completion, solicited bool) bool {
	fmt.Printf("%s: %v %d %v, %d bytes\n", p, c.Opcode, c.ID, c.Status, c.ByteLen)
	return true
}

// Two QPs wired back to back in memory: a Send goes from one to the other
// as ULPDUs, with no socket and no goroutine.
func Example() {
	tab := mem.NewTable()
	pd := tab.AllocPD()
	newQP := func(name string) *qp.QP {
		q, err := qp.New(qp.Config{Memory: tab, Completer: printCQ(name), PD: pd.ID, Version: 1, MULPDU: 1024})
		if err != nil {
			panic(err)
		}
		return q
	}
	a, b := newQP("a"), newQP("b")
	buf := make([]byte, 64)
	mr, _ := pd.RegisterMR(buf, 0, mem.LocalWrite, 0)
	_ = b.PostRecv(qp.RecvWR{ID: 1, SGL: []qp.SGE{{Addr: 0, Length: 64, LKey: mr.STag}}})
	_ = a.PostSend(qp.SendWR{ID: 2, Opcode: qp.WRSend, Inline: []byte("hello"), Signaled: true})
	for a.Peek().Kind == qp.JobWR {
		seg, _ := a.Next()
		ulpdu := append([]byte(nil), seg.Header...)
		for _, p := range seg.Payload {
			ulpdu = append(ulpdu, p...)
		}
		// An endpoint frames the ULPDU and writes it to the LLP here.
		if a.HandOver() {
			a.Written(false)
		}
		_ = b.Receive(ulpdu)
	}
	fmt.Printf("%q\n", buf[:5])
	// Output:
	// a: SEND 2 success
	// b: RECV 1 success, 5 bytes
	// "hello"
}
