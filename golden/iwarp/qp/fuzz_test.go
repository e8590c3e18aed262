package qp_test

import (
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/internal/matrix"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

const fuzzSTag = matrix.FuzzSTag

var fuzzSeed = matrix.FuzzSeed

// FuzzReceive feeds a QP arbitrary ULPDUs, running its transmitter after
// each (so Read Requests are answered), and checks that it never panics,
// never writes outside its registered regions, drops everything after its
// first error and then ends with at most one Terminate.
func FuzzReceive(f *testing.F) {
	f.Add(fuzzSeed(matrix.Write(fuzzSTag, matrix.TargetVA, true, []byte("hello"))))
	f.Add(fuzzSeed(matrix.Write(fuzzSTag, matrix.TargetVA+matrix.TargetLen-2, true, []byte("hello"))))
	f.Add(fuzzSeed(matrix.Untagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("ab")), matrix.Untagged(rdmap.OpSend, 0, 1, 2, true, 0, []byte("cd"))))
	f.Add(fuzzSeed(matrix.ReadReq(1, rdmap.ReadRequestFields{SinkSTag: 1, Size: 16, SrcSTag: fuzzSTag, SrcTO: matrix.TargetVA})))
	f.Add(fuzzSeed((&rdmap.Terminate{Cause: rdmap.DDPInvalidQN, M: true, D: true, DDPHeader: make([]byte, 18)}).AppendMessage(nil, 1, 1, 1)))
	f.Add(fuzzSeed(matrix.Untagged(rdmap.OpSendInvalidate, 0, 1, 0, true, fuzzSTag, []byte("x"))))
	f.Fuzz(fuzzReceiveOne)
}

func fuzzReceiveOne(t *testing.T, in []byte) {
	v := newNode(t, func(c *qp.Config) { c.IRD, c.MULPDU = 2, 256 })
	const guard = 256
	arena := make([]byte, 2*guard+matrix.TargetLen)
	recv := make([]byte, 3*guard)
	for _, b := range [][]byte{arena, recv} {
		for i := range b {
			b[i] = 0xAA
		}
	}
	mr, err := v.pd.RegisterMR(arena[guard:guard+matrix.TargetLen:guard+matrix.TargetLen], matrix.TargetVA, all, 7)
	if err != nil {
		t.Fatal(err)
	}
	rmr, err := v.pd.RegisterMR(recv[guard:2*guard:2*guard], 0, mem.LocalWrite, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = v.q.PostRecv(qp.RecvWR{ID: 1, SGL: []qp.SGE{{Addr: 0, Length: 100, LKey: rmr.STag}}}, qp.RecvWR{ID: 2, SGL: []qp.SGE{{Addr: 100, Length: 156, LKey: rmr.STag}}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	for _, s := range matrix.FuzzSegments(in) {
		err := v.q.Receive(matrix.MapSTag(s, mr.STag))
		if stopped && err == nil {
			t.Fatal("a segment was taken after the stream failed")
		}
		stopped = stopped || err != nil
		if (err != nil) != (v.q.Err() != nil) {
			t.Fatalf("Receive returned %v with the stream's error %v", err, v.q.Err())
		}
		v.run()
	}
	v.q.LLPEnded(nil)
	v.run()
	if !v.exited {
		t.Fatalf("the transmitter did not end: %v", v.q.Peek())
	}
	for i, u := range v.wire {
		m, err := rdmap.Parse(u)
		if err != nil {
			t.Fatalf("ULPDU %d sent does not parse: %v", i, err)
		}
		if m.Opcode() == rdmap.OpTerminate && i != len(v.wire)-1 {
			t.Fatalf("a Terminate before the end (%d of %d)", i, len(v.wire))
		}
	}
	for i := 0; i < guard; i++ {
		if arena[i] != 0xAA || arena[len(arena)-1-i] != 0xAA {
			t.Fatalf("write outside the region at guard byte %d", i)
		}
		if recv[i] != 0xAA || recv[len(recv)-1-i] != 0xAA {
			t.Fatalf("write outside the receive buffer at guard byte %d", i)
		}
	}
}
