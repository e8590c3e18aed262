package ipoib

import (
	"net/netip"
	"testing"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
)

// The parsers below take packets from the local stack and from peers.

func FuzzParseIP(f *testing.F) {
	f.Add(ipv4(60, true))
	f.Add(appendIPv6(nil, v6A, v6B, 17, 64, make([]byte, 8)))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := parseIP(b)
		if err != nil {
			return
		}
		if info.etherType == ipoibcm.EtherTypeIPv4 && !info.df {
			_ = fragment4(b, 68, func(p []byte) error {
				if len(p) > 68 {
					t.Fatalf("fragment of %d octets", len(p))
				}
				return nil
			})
		}
		from := netip.MustParseAddr("198.19.0.9")
		if info.etherType == ipoibcm.EtherTypeIPv6 {
			from = v6B
		}
		if _, err := tooBig(b, info, from, 1280); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseND(f *testing.F) {
	me, _ := ipoibcm.NewUnderlayLinkAddr(ipoibcm.FlagRC, 5, netip.MustParseAddr("198.18.0.1"))
	f.Add(buildNS(v6A, v6B, me))
	f.Add(buildNA(v6B, v6A, me))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok, err := parseND(b)
		if !ok && err != nil {
			t.Fatal("error for a packet that is not NS/NA")
		}
		if ok && err == nil && m.typ != ndSolicit && m.typ != ndAdvert {
			t.Fatalf("type %d", m.typ)
		}
	})
}
