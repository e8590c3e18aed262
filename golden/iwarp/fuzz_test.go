package iwarp

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp/internal/matrix"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

const fuzzSTag = matrix.FuzzSTag

// fuzzSeed is the framed-mode input (mode byte 0) of segs.
func fuzzSeed(segs ...[]byte) []byte { return append([]byte{0}, matrix.FuzzSeed(segs...)...) }

// FuzzReceive feeds an endpoint arbitrary FPDU streams, framed (mode 0) or
// raw bytes (mode 1), and checks that it never panics, hangs or leaks, and
// never writes outside its registered region.
func FuzzReceive(f *testing.F) {
	f.Add(fuzzSeed(write(fuzzSTag, targetVA, true, []byte("hello"))))
	f.Add(fuzzSeed(write(fuzzSTag, targetVA+targetLen-2, true, []byte("hello"))))
	f.Add(fuzzSeed(untagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("ab")), untagged(rdmap.OpSend, 0, 1, 2, true, 0, []byte("cd"))))
	f.Add(fuzzSeed(readReq(1, rdmap.ReadRequestFields{SinkSTag: 1, Size: 16, SrcSTag: fuzzSTag, SrcTO: targetVA})))
	f.Add(fuzzSeed((&rdmap.Terminate{Cause: rdmap.DDPInvalidQN, M: true, D: true, DDPHeader: make([]byte, 18)}).AppendMessage(nil, 1, 1, 1)))
	f.Add(fuzzSeed(untagged(rdmap.OpSendInvalidate, 0, 1, 0, true, fuzzSTag, []byte("x"))))
	f.Add(append([]byte{1}, []byte("\x00\x10garbage-garbage-garbage")...))
	f.Fuzz(fuzzReceiveOne)
}

// fuzzReceiveOne is one FuzzReceive input.
func fuzzReceiveOne(t *testing.T, in []byte) {
	if len(in) == 0 {
		return
	}
	mine, theirs := net.Pipe()
	p := mpa.Params{Initiator: true, Rev: mpa.Rev1, CRC: true}
	tab := mem.NewTable()
	pd := tab.AllocPD()
	cq := NewCQ(64)
	ep, err := New(mine, p, Config{PD: pd, SendCQ: cq, RecvCQ: cq, IRD: 2, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	arena := make([]byte, 2*guard+targetLen)
	for i := range arena {
		arena[i] = 0xAA
	}
	mr, _ := pd.RegisterMR(arena[guard:guard+targetLen:guard+targetLen], targetVA, all, ep.QPN())
	recv := make([]byte, 3*guard)
	for i := range recv {
		recv[i] = 0xAA
	}
	rmr, _ := pd.RegisterMR(recv[guard:2*guard:2*guard], 0, mem.LocalWrite, 0)
	ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 100, LKey: rmr.STag}}}, RecvWR{ID: 2, SGL: []SGE{{Addr: 100, Length: 156, LKey: rmr.STag}}})
	go io.Copy(io.Discard, theirs)

	var stream []byte
	if in[0]%2 == 1 {
		stream = in[1:]
	} else {
		fr := p.Framer()
		for _, s := range matrix.FuzzSegments(in[1:]) {
			stream, _ = fr.AppendFPDU(stream, matrix.MapSTag(s, mr.STag))
		}
	}
	theirs.SetWriteDeadline(testwatch.Deadline())
	theirs.Write(stream)
	theirs.Close()
	if !testwatch.Done(t, ep.Done(), "the endpoint to finish the fuzzed stream") {
		t.FailNow()
	}
	ep.Close()
	for i := 0; i < guard; i++ {
		if arena[i] != 0xAA || arena[len(arena)-1-i] != 0xAA {
			t.Fatalf("write outside the region at guard byte %d", i)
		}
		if recv[i] != 0xAA || recv[len(recv)-1-i] != 0xAA {
			t.Fatalf("write outside the receive buffer at guard byte %d", i)
		}
	}
}
