package main

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// benchStream is 4 MiB of FPDUs carrying MULPDU-sized ULPDUs for EMSS 1460.
func benchStream(b *testing.B, markers bool) []byte {
	f := mpa.Framer{Markers: markers, CRC: true}
	u := untagged(1, 3, true, 0, 1, 0, pattern(mpa.MULPDU(1460, markers)-18, 5))
	var s []byte
	for len(s) < 4<<20 {
		var err error
		if s, err = f.AppendFPDU(s, u); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

var benchCases = []struct {
	name    string
	markers bool
}{{"markers", true}, {"nomarkers", false}}

// BenchmarkStreamDecode measures iwdump -stream -no-startup -json on a
// marker+CRC stream: deframing, DDP/RDMAP decoding and JSON output.
func BenchmarkStreamDecode(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			s := benchStream(b, c.markers)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				p := &printer{w: bufio.NewWriter(io.Discard), json: true}
				decodeStream(p, bytes.NewReader(s), streamOptions{markers: c.markers, crc: true, chunk: 1 << 16})
				if p.errors != 0 {
					b.Fatal("decode error")
				}
			}
		})
	}
}

// BenchmarkStreamDecodeBaseline is golden/mpa's Deframer alone on the same
// stream: the ratio is what dumping costs on top of deframing.
func BenchmarkStreamDecodeBaseline(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			s := benchStream(b, c.markers)
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				d := mpa.NewDeframer(mpa.DeframerConfig{Markers: c.markers, CRC: true})
				for off := 0; off < len(s); off += 1 << 16 {
					if err := d.Feed(s[off:min(off+1<<16, len(s))], func(mpa.ULPDU) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
