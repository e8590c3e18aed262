package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// FuzzStream decodes any octets as one direction's stream, with and without
// a startup frame, markers and CRC: it must report, never panic or hang.
func FuzzStream(f *testing.F) {
	fr := mpa.Framer{Markers: true, CRC: true}
	s, _ := fr.AppendFPDU(nil, untagged(1, 3, true, 0, 1, 0, []byte("seed")))
	s, _ = fr.AppendFPDU(s, tagged(1, 0, true, 7, 0, pattern(700, 1)))
	req := mpa.Frame{Markers: true, CRC: true, Rev: mpa.Rev1, PrivateData: []byte("pd")}
	rb, _ := req.Append(nil)
	f.Add(s, uint8(3))
	f.Add(append(rb, s...), uint8(7))
	f.Add([]byte("MPA ID Rep Frame\x80\x00\x00\x00"), uint8(4))
	f.Add(rev0Stream(f), uint8(0x13))                                              // -no-startup -rev 0
	f.Add(append(startupFrame(f, false, mpa.Rev1), rev0Stream(f)...), uint8(0x17)) // a Request answered by Rev 0
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		p := &printer{w: bufio.NewWriter(io.Discard), json: flags&8 != 0}
		// The high nibble picks the read size and -rev: not given (0, as
		// in the seeds written before -rev existed), 0, 1 or 2.
		rev := (flags >> 4) % 4
		decodeStream(p, bytes.NewReader(data), streamOptions{
			startup: flags&4 != 0, markers: flags&1 != 0, crc: flags&2 != 0, chunk: 1 + int(flags>>4)*97,
			rev: mpa.Revision(max(rev, 1) - 1), revSet: rev != 0})
	})
}

// FuzzCapture decodes any octets as a capture file.
func FuzzCapture(f *testing.F) {
	for _, name := range []string{"bad-crc", "rev2-siw"} {
		b, err := os.ReadFile(capturePath(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &printer{w: bufio.NewWriter(io.Discard), json: true}
		decodeCapture(p, bytes.NewReader(data), "fuzz", 1<<20)
	})
}
