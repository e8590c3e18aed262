package pcapio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

var (
	epoch     = time.Unix(1700000000, 0)
	bigEndian = binary.BigEndian
)

// FuzzReader reads any octets as a capture: every packet it yields is
// decoded and reassembled, and every failure is an error, never a panic.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, LinkEthernet)
	_ = w.WriteSegment(epoch, &Segment{Src: cli4, Dst: srv4, Flags: FlagSYN}, true)
	_ = w.WriteSegment(epoch, &Segment{Src: cli4, Dst: srv4, Seq: 1, Flags: FlagACK, Payload: []byte("MPA ID Req Frame")}, true)
	f.Add(buf.Bytes())
	p := &pcapng{o: byteOrder(bigEndian)}
	p.shb()
	p.idb(LinkRaw, 9)
	p.epb(0, 1, mustIP(f))
	p.spb(mustIP(f))
	f.Add(p.buf)
	f.Fuzz(func(t *testing.T, file []byte) {
		r, err := NewReader(bytes.NewReader(file))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("header error %v is not ErrFormat", err)
			}
			return
		}
		a := NewAssembler(AssemblerConfig{MaxBuffered: 1 << 16})
		for range 10000 {
			pk, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, ErrFormat) {
					t.Fatalf("read error %v is not ErrFormat", err)
				}
				break
			}
			if s, err := DecodeTCP(pk.LinkType, pk.Data); err == nil {
				_ = a.Add(&s, pk.Index)
			}
		}
		a.Flush()
	})
}

// FuzzDecodeTCP decodes any octets under every link type.
func FuzzDecodeTCP(f *testing.F) {
	frame, _ := AppendFrame(nil, &Segment{Src: cli6, Dst: srv6, Flags: FlagACK, Payload: []byte("x")}, true)
	f.Add(uint32(LinkEthernet), frame)
	f.Add(uint32(LinkRaw), mustIP(f))
	f.Add(uint32(LinkSLL2), append(make([]byte, 20), mustIP(f)...))
	f.Fuzz(func(t *testing.T, lt uint32, data []byte) {
		s, err := DecodeTCP(LinkType(lt), data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
			return
		}
		if len(s.Payload) > len(data) {
			t.Fatalf("payload longer than the frame")
		}
	})
}

func mustIP(tb testing.TB) []byte {
	f, err := AppendFrame(nil, &Segment{Src: cli4, Dst: srv4, Seq: 5, Flags: FlagACK | FlagPSH, Payload: []byte("fuzz")}, true)
	if err != nil {
		tb.Fatal(err)
	}
	return f[etherHeaderLen:]
}
