package mpa

import (
	"hash/crc32"
	"testing"
)

// The framing and deframing benchmarks carry 4 KiB ULPDUs; their
// ...Baseline twins run hash/crc32 (Castagnoli) over the same octets, so
// `make bench` can print how close MPA gets to the bare CRC.
var benchCases = []struct {
	name         string
	markers, crc bool
}{
	{"4KiB/markers+crc", true, true},
	{"4KiB/crc", false, true},
}

const benchULPDU = 4096

func BenchmarkFraming(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			f := Framer{Markers: bc.markers, CRC: bc.crc}
			u := make([]byte, benchULPDU)
			buf := make([]byte, 0, 2*benchULPDU)
			b.SetBytes(benchULPDU)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = f.AppendFPDU(buf[:0], u)
			}
		})
	}
}

func BenchmarkFramingBaseline(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			f := Framer{Markers: bc.markers, CRC: bc.crc}
			wire, _ := f.AppendFPDU(nil, make([]byte, benchULPDU))
			b.SetBytes(benchULPDU)
			for b.Loop() {
				crc32.Checksum(wire[:len(wire)-CRCLen], castagnoli)
			}
		})
	}
}

// benchStream frames enough 4 KiB ULPDUs that the marker grid cycles
// through every phase, so the stream can be fed again and again.
func benchStream(markers, crc bool) ([]byte, int) {
	f := Framer{Markers: markers, CRC: crc}
	var out []byte
	n := 0
	for n == 0 || f.Offset%MarkerPeriod != 0 {
		out, _ = f.AppendFPDU(out, make([]byte, benchULPDU))
		n++
	}
	return out, n
}

func BenchmarkDeframing(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			stream, n := benchStream(bc.markers, bc.crc)
			d := NewDeframer(DeframerConfig{Markers: bc.markers, CRC: bc.crc})
			sink := func(ULPDU) error { return nil }
			b.SetBytes(int64(n * benchULPDU))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Feed(stream, sink); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDeframingBaseline(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			stream, n := benchStream(bc.markers, bc.crc)
			b.SetBytes(int64(n * benchULPDU))
			for b.Loop() {
				crc32.Checksum(stream, castagnoli)
			}
		})
	}
}
