package mpa_test

import (
	"context"
	"fmt"
	"net"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// A sender frames ULPDUs from SeqStart; the first FPDU opens with a zero
// marker when the peer asked for markers.
func ExampleFramer_AppendFPDU() {
	f := mpa.Framer{Markers: true, CRC: true}
	wire, err := f.AppendFPDU(nil, []byte("hello"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("% x\n", wire)
	fmt.Println("next FPDU at stream offset", f.Offset)
	// Output:
	// 00 00 00 00 00 05 68 65 6c 6c 6f 00 48 d0 76 ef
	// next FPDU at stream offset 16
}

// A sender that writes payloads straight from their memory (writev)
// frames around them: the headers and trailer go in its own buffer.
func ExampleFramer_FrameAround() {
	f := mpa.Framer{CRC: true}
	payload := [][]byte{[]byte("hel"), []byte("lo")} // in registered memory, say
	buf := append([]byte{0, 0}, "hdr:"...)           // ULPDU_Length slot, then headers
	mid := len(buf)
	buf, err := f.FrameAround(buf, 0, payload)
	if err != nil {
		panic(err)
	}
	wire := net.Buffers{buf[:mid], payload[0], payload[1], buf[mid:]} // what writev sends
	var all []byte
	for _, b := range wire {
		all = append(all, b...)
	}
	same, _ := (&mpa.Framer{CRC: true}).AppendFPDU(nil, []byte("hdr:hello"))
	fmt.Printf("% x\n", all)
	fmt.Println("same as AppendFPDU:", string(all) == string(same))
	// Output:
	// 00 09 68 64 72 3a 68 65 6c 6c 6f 00 80 73 b7 a7
	// same as AppendFPDU: true
}

// A receiver feeds TCP payload in whatever pieces it arrives in.
func ExampleDeframer_Feed() {
	f := mpa.Framer{Markers: true, CRC: true}
	stream, _ := f.AppendFPDU(nil, []byte("first"))
	stream, _ = f.AppendFPDU(stream, []byte("second"))
	d := mpa.NewDeframer(mpa.DeframerConfig{Markers: true, CRC: true})
	for _, piece := range [][]byte{stream[:7], stream[7:20], stream[20:]} {
		err := d.Feed(piece, func(u mpa.ULPDU) error {
			fmt.Printf("%q at stream offset %d (%d octets on the wire)\n", u.Data, u.Offset, u.WireLen)
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
	// Output:
	// "first" at stream offset 0 (16 octets on the wire)
	// "second" at stream offset 16 (12 octets on the wire)
}

// Initiate and Respond negotiate markers, CRC and the revision over any
// net.Conn; here the Responder asks for markers and both keep CRCs on.
func ExampleInitiate() {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		_, _ = mpa.Respond(context.Background(), b, mpa.Config{Markers: true})
	}()
	p, err := mpa.Initiate(context.Background(), a, mpa.Config{PrivateData: []byte("hi")})
	if err != nil {
		panic(err)
	}
	fmt.Println("revision:", p.Rev)
	fmt.Println("markers on what we send:", p.TxMarkers, "receive:", p.RxMarkers)
	fmt.Println("CRC:", p.CRC)
	// Output:
	// revision: 1 (RFC 5044)
	// markers on what we send: true receive: false
	// CRC: true
}

func ExampleMULPDU() {
	fmt.Println(mpa.MULPDU(1460, true), mpa.MULPDU(1460, false))
	// Output: 1442 1454
}
