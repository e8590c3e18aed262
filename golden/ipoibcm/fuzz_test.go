package ipoibcm

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// Every parser takes untrusted bytes: it must return a value or an error
// matching one of the sentinels, never panic, and what it accepts must
// re-encode to the octets it read (reserved fields aside).

func isOurs(err error) bool {
	for _, s := range []error{ErrShort, ErrQPNRange, ErrServiceID, ErrReserved, ErrEtherType, ErrMTU, ErrExtension, ErrCredits} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func FuzzParseLinkAddr(f *testing.F) {
	f.Add([]byte{0x80, 0, 0, 0x48, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseLinkAddr(b)
		if err != nil {
			if !isOurs(err) || len(b) >= LinkAddrLen {
				t.Fatalf("unexpected error %v for %d octets", err, len(b))
			}
			return
		}
		if !bytes.Equal(a[:], b[:LinkAddrLen]) {
			t.Fatal("address does not keep the octets")
		}
		r, err := NewLinkAddr(a.Flags(), a.QPN(), a.GID())
		if err != nil || r.Compare(a) != 0 || r[0]&FlagsReservedMask != 0 {
			t.Fatalf("re-encode %v -> %v, %v", a, r, err)
		}
	})
}

func FuzzParseServiceID(f *testing.F) {
	f.Add(uint64(0x1000000000000048))
	f.Add(uint64(0x0100000000ABCDEF))
	f.Fuzz(func(t *testing.T, sid uint64) {
		qpn, mode, err := ParseServiceID(sid)
		if err != nil {
			if !errors.Is(err, ErrServiceID) {
				t.Fatal(err)
			}
			return
		}
		back, err := ServiceID(qpn, mode)
		if err != nil || back != sid {
			t.Fatalf("%#x -> %#x/%v -> %#x, %v", sid, qpn, mode, back, err)
		}
	})
}

func FuzzParsePrivateData(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0x48, 0, 0, 0xff, 0xf4})
	f.Add([]byte{0, 0, 1, 2, 0, 0, 0xff, 0xf4, 1, 0, 0, 64, 0x10, 0, 0, 0, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePrivateData(b)
		if err != nil {
			if !errors.Is(err, ErrShort) {
				t.Fatal(err)
			}
			return
		}
		enc, err := p.Append(nil)
		if err != nil || !bytes.Equal(enc[1:], b[1:PrivateDataLen]) || enc[0] != 0 {
			t.Fatalf("re-encode %x -> %x, %v", b, enc, err)
		}
		h, err := ParseHello(b)
		if err != nil {
			if !isOurs(err) {
				t.Fatal(err)
			}
			return
		}
		enc, err = h.Append(nil)
		if err != nil || !bytes.Equal(enc[1:], b[1:HelloLen]) {
			t.Fatalf("hello re-encode %x -> %x, %v", b, enc, err)
		}
	})
}

func FuzzParseEncap(f *testing.F) {
	f.Add([]byte{0x08, 0x00, 0, 0, 0x45, 0})
	f.Add([]byte{0x86, 0xdd, 0, 1})
	f.Add([]byte{0x88, 0xb5, 0, 0, 1, 1, 0, 0, 0, 0, 0, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, strict := range []bool{true, false} {
			h, p, err := ParseEncap(b, strict)
			if err != nil {
				if !isOurs(err) {
					t.Fatal(err)
				}
				continue
			}
			if !bytes.Equal(h.Append(nil)[:2], b[:2]) || !bytes.Equal(p, b[HeaderLen:]) {
				t.Fatal("header or payload not where they were")
			}
			if h.EtherType == EtherTypeCredit {
				if u, err := ParseControl(p); err == nil {
					if enc := u.Append(nil); !bytes.Equal(enc[8:], p[4:8]) {
						t.Fatalf("credit re-encode %x", enc)
					}
				} else if !isOurs(err) {
					t.Fatal(err)
				}
			}
			for _, ch := range []Channel{ChannelConnected, ChannelDatagram} {
				if err := CheckEtherType(h.EtherType, ch); err != nil && !errors.Is(err, ErrEtherType) {
					t.Fatal(err)
				}
			}
		}
	})
}

func FuzzParseControl(f *testing.F) {
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 16})
	f.Add([]byte{1, 1, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseControl(b)
		if err != nil {
			if !isOurs(err) {
				t.Fatal(err)
			}
			return
		}
		if (u.Kind == ControlGrant) != (u.Grant != 0) {
			t.Fatalf("accepted %+v", u)
		}
		if enc := u.Append(nil); !bytes.Equal(enc[4:6], b[:2]) || !bytes.Equal(enc[8:], b[4:8]) {
			t.Fatalf("re-encode %x", enc)
		}
		fc, _ := NewFlowControl(8, 8)
		_ = fc.Granted(u) // must not panic; may refuse
	})
}

func FuzzParseARP(f *testing.F) {
	req, _ := ARP{Op: ARPRequest, SenderHW: LinkAddr{0x80, 0, 0, 1}, SenderIP: netip.MustParseAddr("198.19.0.1"), TargetIP: netip.MustParseAddr("198.19.0.2")}.Append(nil)
	f.Add(req)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseARP(b)
		if err != nil {
			if !isOurs(err) {
				t.Fatal(err)
			}
			return
		}
		enc, err := a.Append(nil)
		if err != nil || !bytes.Equal(enc, b[:ARPLen]) {
			t.Fatalf("re-encode %x -> %x, %v", b[:ARPLen], enc, err)
		}
	})
}
