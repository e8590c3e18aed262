package pcapio_test

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/openiwarp/openiwarp/internal/pcapio"
)

// Write two segments of one connection, read the file back and put the
// client's byte stream together again.
func Example() {
	var file bytes.Buffer
	w, _ := pcapio.NewWriter(&file, pcapio.LinkEthernet)
	cli := netip.MustParseAddrPort("198.18.0.1:40000")
	srv := netip.MustParseAddrPort("198.18.0.2:5001")
	at := time.Unix(1700000000, 0)
	_ = w.WriteSegment(at, &pcapio.Segment{Src: cli, Dst: srv, Seq: 100, Flags: pcapio.FlagSYN}, true)
	// Out of order: the second piece is captured first.
	_ = w.WriteSegment(at, &pcapio.Segment{Src: cli, Dst: srv, Seq: 107, Flags: pcapio.FlagACK, Payload: []byte("world")}, true)
	_ = w.WriteSegment(at, &pcapio.Segment{Src: cli, Dst: srv, Seq: 101, Flags: pcapio.FlagACK, Payload: []byte("hello ")}, true)

	r, _ := pcapio.NewReader(&file)
	asm := pcapio.NewAssembler(pcapio.AssemblerConfig{
		Data: func(s *pcapio.Stream, p []byte, frame int) { fmt.Printf("%v frame %d: %q\n", s, frame, p) },
	})
	for {
		pk, err := r.Next()
		if err == io.EOF {
			break
		}
		seg, err := pcapio.DecodeTCP(pk.LinkType, pk.Data)
		if err != nil {
			fmt.Println(err)
			continue
		}
		_ = asm.Add(&seg, pk.Index)
	}
	asm.Flush()
	// Output:
	// 198.18.0.1:40000 -> 198.18.0.2:5001 frame 3: "hello "
	// 198.18.0.1:40000 -> 198.18.0.2:5001 frame 2: "world"
}
