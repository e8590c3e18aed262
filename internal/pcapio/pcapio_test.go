package pcapio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	cli4 = netip.MustParseAddrPort("198.18.0.1:40000")
	srv4 = netip.MustParseAddrPort("198.18.0.2:5001")
	cli6 = netip.MustParseAddrPort("[2001:db8::1]:40000")
	srv6 = netip.MustParseAddrPort("[2001:db8::2]:5001")
)

// ipPacket returns the IP packet inside an Ethernet frame built by AppendFrame.
func ipPacket(t testing.TB, s *Segment) []byte {
	f, err := AppendFrame(nil, s, true)
	require.NoError(t, err)
	return f[etherHeaderLen:]
}

func TestAppendFrameChecksumsAndRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src, dst netip.AddrPort
		payload  []byte
	}{
		{"IPv4 empty", cli4, srv4, nil},
		{"IPv4 odd", cli4, srv4, []byte("hello")},
		{"IPv4 max", cli4, srv4, bytes.Repeat([]byte{0xa5}, MaxSegmentPayload)},
		{"IPv6", cli6, srv6, []byte("iwarp over v6")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Segment{Src: tc.src, Dst: tc.dst, Seq: 0xfffffff0, Ack: 7, Flags: FlagACK | FlagPSH, Payload: tc.payload}
			f, err := AppendFrame(nil, &s, true)
			require.NoError(t, err)
			ip := f[etherHeaderLen:]
			var tcp []byte
			var pseudo uint32
			if tc.src.Addr().Is4() {
				assert.Equal(t, uint16(0xffff), fold(sum(0, ip[:20])), "IPv4 header checksum")
				assert.Equal(t, len(ip), int(binary.BigEndian.Uint16(ip[2:])), "IPv4 total length")
				tcp = ip[20:]
				pseudo = sum(sum(0, ip[12:16]), ip[16:20]) + protoTCP + uint32(len(tcp))
			} else {
				assert.Equal(t, len(ip)-40, int(binary.BigEndian.Uint16(ip[4:])), "IPv6 payload length")
				tcp = ip[40:]
				pseudo = sum(sum(0, ip[8:24]), ip[24:40]) + protoTCP + uint32(len(tcp))
			}
			assert.Equal(t, uint16(0xffff), fold(sum(pseudo, tcp)), "TCP checksum")
			got, err := DecodeTCP(LinkEthernet, f)
			require.NoError(t, err)
			assert.Equal(t, s.Src, got.Src)
			assert.Equal(t, s.Dst, got.Dst)
			assert.Equal(t, s.Seq, got.Seq)
			assert.Equal(t, s.Ack, got.Ack)
			assert.Equal(t, s.Flags, got.Flags)
			assert.Equal(t, uint16(0xffff), got.Window)
			assert.Equal(t, len(tc.payload), len(got.Payload))
			assert.True(t, bytes.Equal(tc.payload, got.Payload))
		})
	}
	_, err := AppendFrame(nil, &Segment{Src: cli4, Dst: srv6}, true)
	assert.Error(t, err, "mixed families")
	_, err = AppendFrame(nil, &Segment{Src: cli4, Dst: srv4, Payload: make([]byte, MaxSegmentPayload+1)}, true)
	assert.Error(t, err, "oversized payload")
}

func TestDecodeLinkTypes(t *testing.T) {
	seg := Segment{Src: cli4, Dst: srv4, Seq: 1, Ack: 2, Flags: FlagACK, Payload: []byte("x")}
	ip4 := ipPacket(t, &seg)
	seg6 := Segment{Src: cli6, Dst: srv6, Seq: 1, Flags: FlagACK, Payload: []byte("y")}
	ip6 := ipPacket(t, &seg6)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	be16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	mac := make([]byte, 12)
	sll := func(proto uint16) []byte { return cat(make([]byte, 14), be16(proto)) }
	sll2 := func(proto uint16) []byte { return cat(be16(proto), make([]byte, 18)) }
	for _, tc := range []struct {
		name string
		lt   LinkType
		data []byte
		want netip.AddrPort // zero: error expected
		err  error
	}{
		{"ethernet v4", LinkEthernet, cat(mac, be16(0x0800), ip4), cli4, nil},
		{"ethernet v6", LinkEthernet, cat(mac, be16(0x86dd), ip6), cli6, nil},
		{"802.1Q", LinkEthernet, cat(mac, be16(0x8100), be16(42), be16(0x0800), ip4), cli4, nil},
		{"QinQ", LinkEthernet, cat(mac, be16(0x88a8), be16(1), be16(0x8100), be16(2), be16(0x86dd), ip6), cli6, nil},
		{"ARP", LinkEthernet, cat(mac, be16(0x0806), make([]byte, 28)), netip.AddrPort{}, ErrNotTCP},
		{"SLL", LinkSLL, cat(sll(0x0800), ip4), cli4, nil},
		{"SLL v6", LinkSLL, cat(sll(0x86dd), ip6), cli6, nil},
		{"SLL2", LinkSLL2, cat(sll2(0x0800), ip4), cli4, nil},
		{"SLL2 v6", LinkSLL2, cat(sll2(0x86dd), ip6), cli6, nil},
		{"raw v4", LinkRaw, ip4, cli4, nil},
		{"raw v6", LinkRaw, ip6, cli6, nil},
		{"IPV4", LinkIPv4, ip4, cli4, nil},
		{"null LE v4", LinkNull, cat([]byte{2, 0, 0, 0}, ip4), cli4, nil},
		{"null LE v6 (macOS)", LinkNull, cat([]byte{30, 0, 0, 0}, ip6), cli6, nil},
		{"null BE v4", LinkNull, cat([]byte{0, 0, 0, 2}, ip4), cli4, nil},
		{"loop v6", LinkLoop, cat([]byte{0, 0, 0, 24}, ip6), cli6, nil},
		{"null unknown family", LinkNull, cat([]byte{7, 0, 0, 0}, ip4), netip.AddrPort{}, ErrNotTCP},
		{"unknown link type", LinkType(147), ip4, netip.AddrPort{}, ErrLinkType},
		{"short ethernet", LinkEthernet, mac, netip.AddrPort{}, ErrTruncated},
		{"short VLAN", LinkEthernet, cat(mac, be16(0x8100), []byte{0}), netip.AddrPort{}, ErrTruncated},
		{"short SLL", LinkSLL, make([]byte, 10), netip.AddrPort{}, ErrTruncated},
		{"short SLL2", LinkSLL2, make([]byte, 19), netip.AddrPort{}, ErrTruncated},
		{"short null", LinkNull, []byte{2}, netip.AddrPort{}, ErrTruncated},
		{"empty raw", LinkRaw, nil, netip.AddrPort{}, ErrTruncated},
		{"IP version 5", LinkRaw, cat([]byte{0x50}, ip4[1:]), netip.AddrPort{}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeTCP(tc.lt, tc.data)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				assert.NotEmpty(t, de.Layer)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.Src)
			assert.Len(t, got.Payload, 1)
		})
	}
}

func TestDecodeIPErrors(t *testing.T) {
	seg := Segment{Src: cli4, Dst: srv4, Flags: FlagACK, Payload: []byte("abcd")}
	ip4 := ipPacket(t, &seg)
	mod4 := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), ip4...)) }
	seg6 := Segment{Src: cli6, Dst: srv6, Flags: FlagACK, Payload: []byte("abcd")}
	ip6 := ipPacket(t, &seg6)
	// withExt inserts an IPv6 extension header of type ext before TCP.
	withExt := func(ext byte, hdr []byte) []byte {
		b := append([]byte(nil), ip6[:40]...)
		b[6] = ext
		hdr[0] = protoTCP
		b = append(b, hdr...)
		b = append(b, ip6[40:]...)
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		err  error
	}{
		{"v4 more fragments", mod4(func(b []byte) []byte { b[6] = 0x20; return b }), ErrFragment},
		{"v4 fragment offset", mod4(func(b []byte) []byte { b[7] = 8; return b }), ErrFragment},
		{"v4 UDP", mod4(func(b []byte) []byte { b[9] = 17; return b }), ErrNotTCP},
		{"v4 IHL 4", mod4(func(b []byte) []byte { b[0] = 0x44; return b }), ErrMalformed},
		{"v4 total below IHL", mod4(func(b []byte) []byte { binary.BigEndian.PutUint16(b[2:], 10); return b }), ErrMalformed},
		{"v4 snapped", ip4[:30], ErrTruncated},
		{"v4 header short", ip4[:12], ErrTruncated},
		{"TCP offset past end", mod4(func(b []byte) []byte { b[20+12] = 0xf0; return b }), ErrMalformed},
		{"TCP offset below 5", mod4(func(b []byte) []byte { b[20+12] = 0x40; return b }), ErrMalformed},
		{"v6 short", ip6[:39], ErrTruncated},
		{"v6 snapped", ip6[:50], ErrTruncated},
		{"v6 jumbo", func() []byte { b := append([]byte(nil), ip6...); b[4], b[5] = 0, 0; return b }(), ErrExtHeader},
		{"v6 fragment header", withExt(44, make([]byte, 8)), ErrFragment},
		{"v6 ESP", withExt(50, make([]byte, 8)), ErrExtHeader},
		{"v6 ICMPv6", func() []byte { b := append([]byte(nil), ip6...); b[6] = 58; return b }(), ErrNotTCP},
		{"v6 hop-by-hop cut", func() []byte { b := withExt(0, []byte{0, 1, 0, 0, 0, 0, 0, 0}); return b }(), ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeTCP(LinkRaw, tc.data)
			require.ErrorIs(t, err, tc.err)
			assert.Contains(t, err.Error(), tc.err.Error())
		})
	}
	// Walkable extension headers lead to TCP.
	for _, ext := range []byte{0, 43, 60} {
		got, err := DecodeTCP(LinkRaw, withExt(ext, make([]byte, 16)[:8]))
		require.NoError(t, err, "extension header %d", ext)
		assert.Equal(t, []byte("abcd"), got.Payload)
	}
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// pcapng builds test files block by block in either byte order.
type pcapng struct {
	o   byteOrder
	buf []byte
}

func (p *pcapng) block(typ uint32, body []byte) {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	p.buf = p.o.AppendUint32(p.buf, typ)
	p.buf = p.o.AppendUint32(p.buf, n)
	p.buf = append(p.buf, body...)
	p.buf = p.o.AppendUint32(p.buf, n)
}

func (p *pcapng) shb() {
	b := p.o.AppendUint32(nil, ngByteOrder)
	b = p.o.AppendUint16(b, 1)
	b = p.o.AppendUint16(b, 0)
	b = p.o.AppendUint64(b, ^uint64(0))
	p.block(ngSHB, b)
}

func (p *pcapng) idb(lt LinkType, tsresol int) {
	b := p.o.AppendUint16(nil, uint16(lt))
	b = p.o.AppendUint16(b, 0)
	b = p.o.AppendUint32(b, 0)
	if tsresol >= 0 {
		b = p.o.AppendUint16(b, 9)
		b = p.o.AppendUint16(b, 1)
		b = append(b, byte(tsresol), 0, 0, 0)
		b = p.o.AppendUint32(b, 0) // opt_endofopt
	}
	p.block(ngIDB, b)
}

func (p *pcapng) epb(iface uint32, ts uint64, data []byte) {
	b := p.o.AppendUint32(nil, iface)
	b = p.o.AppendUint32(b, uint32(ts>>32))
	b = p.o.AppendUint32(b, uint32(ts))
	b = p.o.AppendUint32(b, uint32(len(data)))
	b = p.o.AppendUint32(b, uint32(len(data)))
	p.block(ngEPB, append(b, data...))
}

func (p *pcapng) spb(data []byte) {
	p.block(ngSPB, append(p.o.AppendUint32(nil, uint32(len(data))), data...))
}

// classicPcap builds a pcap file with one packet in the given byte order
// and resolution.
func classicPcap(o byteOrder, nano bool, lt LinkType, sec, frac uint32, data []byte) []byte {
	magic := uint32(magicMicro)
	if nano {
		magic = magicNano
	}
	b := o.AppendUint32(nil, magic)
	b = o.AppendUint16(b, 2)
	b = o.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = o.AppendUint32(b, 65535)
	b = o.AppendUint32(b, uint32(lt))
	b = o.AppendUint32(b, sec)
	b = o.AppendUint32(b, frac)
	b = o.AppendUint32(b, uint32(len(data)))
	b = o.AppendUint32(b, uint32(len(data)+10))
	return append(b, data...)
}

func readAll(t testing.TB, file []byte) []Packet {
	r, err := NewReader(bytes.NewReader(file))
	require.NoError(t, err)
	var out []Packet
	for {
		p, err := r.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		p.Data = append([]byte(nil), p.Data...)
		out = append(out, p)
	}
}

func TestReaderFormats(t *testing.T) {
	seg := Segment{Src: cli4, Dst: srv4, Flags: FlagACK, Payload: []byte("pcap")}
	frame, err := AppendFrame(nil, &seg, true)
	require.NoError(t, err)
	raw := frame[etherHeaderLen:]
	when := time.Date(2026, 11, 22, 3, 0, 0, 123456000, time.UTC)

	for _, tc := range []struct {
		name string
		o    byteOrder
		nano bool
		frac uint32
	}{
		{"LE micro", binary.LittleEndian, false, 123456},
		{"BE micro", binary.BigEndian, false, 123456},
		{"LE nano", binary.LittleEndian, true, 123456000},
		{"BE nano", binary.BigEndian, true, 123456000},
	} {
		t.Run("pcap "+tc.name, func(t *testing.T) {
			pk := readAll(t, classicPcap(tc.o, tc.nano, LinkEthernet, uint32(when.Unix()), tc.frac, frame))
			require.Len(t, pk, 1)
			assert.Equal(t, 1, pk[0].Index)
			assert.Equal(t, when, pk[0].Time)
			assert.Equal(t, LinkEthernet, pk[0].LinkType)
			assert.Equal(t, frame, pk[0].Data)
			assert.Equal(t, len(frame)+10, pk[0].OrigLen)
		})
	}

	for _, o := range []byteOrder{binary.LittleEndian, binary.BigEndian} {
		t.Run("pcapng "+o.String(), func(t *testing.T) {
			p := &pcapng{o: o}
			p.shb()
			p.idb(LinkEthernet, -1)     // microseconds by default
			p.idb(LinkRaw, 9)           // nanoseconds
			p.block(4, make([]byte, 8)) // name resolution block: skipped
			p.epb(0, uint64(when.UnixMicro()), frame)
			p.epb(1, uint64(when.UnixNano()), raw)
			p.spb(frame)
			// A second section in the other byte order resets interfaces.
			q := &pcapng{o: byteOrder(binary.LittleEndian)}
			if o == byteOrder(binary.LittleEndian) {
				q.o = binary.BigEndian
			}
			q.shb()
			q.idb(LinkSLL2, 0x80|10) // 2^-10 s
			q.epb(0, uint64(when.Unix())<<10|512, append(append(binary.BigEndian.AppendUint16(nil, 0x0800), make([]byte, 18)...), raw...))
			pk := readAll(t, append(p.buf, q.buf...))
			require.Len(t, pk, 4)
			for i, want := range []struct {
				lt    LinkType
				iface int
				t     time.Time
			}{
				{LinkEthernet, 0, when},
				{LinkRaw, 1, when},
				{LinkEthernet, 0, time.Unix(0, 0).UTC()},
				{LinkSLL2, 0, time.Unix(when.Unix(), 5e8).UTC()},
			} {
				assert.Equal(t, i+1, pk[i].Index)
				assert.Equal(t, want.lt, pk[i].LinkType, "packet %d", i+1)
				assert.Equal(t, want.iface, pk[i].Interface, "packet %d", i+1)
				if i != 2 { // SPBs carry no timestamp
					assert.Equal(t, want.t, pk[i].Time, "packet %d", i+1)
				}
				s, err := DecodeTCP(pk[i].LinkType, pk[i].Data)
				require.NoError(t, err, "packet %d", i+1)
				assert.Equal(t, []byte("pcap"), s.Payload)
			}
		})
	}
}

func TestReaderBadFiles(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, LinkEthernet)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, w.WriteSegment(time.Unix(int64(i), 0), &Segment{Src: cli4, Dst: srv4, Seq: uint32(i), Payload: []byte("data")}, true))
	}
	good := buf.Bytes()
	// Every cut inside a record is reported as a damaged file, never a
	// panic; cuts at record boundaries are clean ends.
	recLen := (len(good) - 24) / 3
	for n := range len(good) {
		r, err := NewReader(bytes.NewReader(good[:n]))
		if n < 24 {
			require.ErrorIs(t, err, ErrFormat, "cut at %d", n)
			continue
		}
		require.NoError(t, err)
		var got int
		for {
			_, err = r.Next()
			if err != nil {
				break
			}
			got++
		}
		if (n-24)%recLen == 0 {
			assert.Equal(t, io.EOF, err, "cut at %d", n)
		} else {
			require.ErrorIs(t, err, ErrFormat, "cut at %d", n)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", n)
			assert.Contains(t, err.Error(), "file ends inside")
		}
		assert.Equal(t, (n-24)/recLen, got)
	}

	bad := func(name string, file []byte, msg string) {
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(file))
			if err == nil {
				for err == nil {
					_, err = r.Next()
				}
			}
			require.ErrorIs(t, err, ErrFormat)
			assert.Contains(t, err.Error(), msg)
		})
	}
	bad("not a capture", []byte("GET / HTTP/1.1\r\n\r\nhello world....."), "neither pcap nor pcapng")
	huge := append([]byte(nil), good[:24+16]...)
	binary.LittleEndian.PutUint32(huge[24+8:], 1<<30)
	bad("huge record", huge, "exceeds")

	o := byteOrder(binary.LittleEndian)
	p := &pcapng{o: o}
	p.shb()
	p.epb(0, 0, []byte{1})
	bad("packet before interface", p.buf, "only 0 described")
	p = &pcapng{o: o}
	p.shb()
	p.idb(LinkEthernet, -1)
	p.block(ngEPB, make([]byte, 8))
	bad("short EPB", p.buf, "packet block too short")
	p = &pcapng{o: o}
	p.shb()
	p.idb(LinkEthernet, -1)
	b := o.AppendUint32(make([]byte, 12), 1000)
	p.block(ngEPB, append(b, make([]byte, 8)...))
	bad("caplen past block", p.buf, "runs past its block")
	p = &pcapng{o: o}
	p.shb()
	p.buf = o.AppendUint32(p.buf, ngIDB)
	p.buf = o.AppendUint32(p.buf, 13)
	bad("block length not multiple of 4", p.buf, "block length 13")
	p = &pcapng{o: o}
	p.shb()
	p.idb(LinkEthernet, -1)
	o.PutUint32(p.buf[len(p.buf)-4:], 99)
	bad("trailing length mismatch", p.buf, "trailing length")
	p = &pcapng{o: o}
	p.shb()
	p.idb(LinkEthernet, 30)
	bad("tsresol too fine", p.buf, "too fine")
	p = &pcapng{o: o}
	p.shb()
	o.PutUint32(p.buf[8:], 0x11223344)
	bad("bad byte-order magic", p.buf, "byte-order magic")
}

func TestDecodeErrorWrapping(t *testing.T) {
	_, err := DecodeTCP(LinkRaw, []byte{0x45})
	var de *DecodeError
	require.True(t, errors.As(err, &de))
	assert.Equal(t, "IPv4", de.Layer)
	assert.Equal(t, "IPv4: packet truncated: header needs 20 octets, have 1", err.Error())
}
