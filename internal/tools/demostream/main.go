// Command demostream prints, one hex line per ULPDU, what an iWARP
// requester sends in a short RDMAP conversation: a Send, an RDMA Write
// segmented at MULPDU, an RDMA Read Request, a Send with Solicited Event
// and Invalidate, and a Terminate. `make demo` pipes it through
// `iwdump -encode` and decodes the stream back with `iwdump -stream`.
package main

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"os"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

func main() {
	emss := flag.Int("emss", 1460, "TCP effective MSS the segments are sized for")
	markers := flag.Bool("markers", true, "size segments for a stream with markers")
	flag.Parse()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, u := range conversation(mpa.MULPDU(*emss, *markers)) {
		fmt.Fprintln(w, hex.EncodeToString(u))
	}
}

const (
	v          = ddp.Version1
	rv         = rdmap.Version1
	sinkSTag   = 0x00012345 // the peer's buffer for the Write
	readSTag   = 0x00023456 // the peer's buffer the Read takes from
	localSTag  = 0x00034567 // our buffer the Read Response lands in
	invalidate = 0x00012345
)

// conversation returns the ULPDUs in the order they are sent.
func conversation(mulpdu int) [][]byte {
	var out [][]byte
	send := func(op rdmap.Opcode, msn uint32, inv uint32, payload []byte) {
		h := ddp.UntaggedFields{Last: true, Version: v, RsvdULP0: uint8(rdmap.NewControl(rv, op)),
			RsvdULP1: inv, QN: rdmap.QNSend, MSN: msn}
		out = append(out, append(h.Append(nil), payload...))
	}
	send(rdmap.OpSend, 1, 0, []byte("hello from openiwarp"))

	// An RDMA Write of 3000 octets, cut into MULPDU-sized tagged segments.
	msg := make([]byte, 3000)
	for i := range msg {
		msg[i] = byte(i)
	}
	chunk := ddp.MaxPayload(mulpdu, ddp.TaggedHeaderLen)
	for off := 0; off < len(msg); off += chunk {
		end := min(off+chunk, len(msg))
		h := ddp.TaggedFields{Last: end == len(msg), Version: v,
			RsvdULP: uint8(rdmap.NewControl(rv, rdmap.OpWrite)), STag: sinkSTag, TO: 0x10000 + uint64(off)}
		out = append(out, append(h.Append(nil), msg[off:end]...))
	}

	rr := rdmap.ReadRequestFields{SinkSTag: localSTag, SinkTO: 0x2000, Size: 2048, SrcSTag: readSTag, SrcTO: 0x8000}
	h := ddp.UntaggedFields{Last: true, Version: v, RsvdULP0: uint8(rdmap.NewControl(rv, rdmap.OpReadRequest)),
		QN: rdmap.QNReadRequest, MSN: 1}
	out = append(out, rr.Append(h.Append(nil)))

	send(rdmap.OpSendSEInvalidate, 2, invalidate, []byte("done; invalidate the Write's STag"))

	t := rdmap.Terminate{Cause: rdmap.DDPInvalidSTag, D: true, M: true, SegLen: 30,
		DDPHeader: ddp.TaggedFields{Last: true, Version: v, STag: 0xdead00, TO: 0}.Append(nil)}
	out = append(out, t.AppendMessage(nil, rv, v, 1))
	return out
}
