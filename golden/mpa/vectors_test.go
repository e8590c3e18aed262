package mpa

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ddpSend builds the 42-octet ULPDU of RFC 5044 Fig. 5/6 and draft-01
// Fig. 5/6: an untagged DDP Send with Last set, QN 0, the given MSN, MO 0
// and 24 zero octets of payload; ctrl is 0x4143 (version 1) or 0x4003
// (version 0).
func ddpSend(ctrl uint16, msn byte) []byte {
	u := make([]byte, 42)
	u[0], u[1] = byte(ctrl>>8), byte(ctrl)
	u[13] = msn
	return u
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	require.NoError(t, err)
	return b
}

// TestPublishedVectors reproduces the hex examples of RFC 5044 Fig. 5 and 6
// and draft-01 Fig. 5 and 6 byte for byte (R18-R22, R33, R34).
func TestPublishedVectors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ctrl       uint16
		crc1, crc2 string
	}{
		{"RFC5044", 0x4143, "52239983", "84925898"},
		{"draft-01", 0x4003, "4c86b384", "a19cd103"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Framer{Markers: true, CRC: true}
			out, err := f.AppendFPDU(nil, ddpSend(tc.ctrl, 1))
			require.NoError(t, err)
			first := unhex(t, "00000000 002a"+hex.EncodeToString(ddpSend(tc.ctrl, 1))+tc.crc1)
			require.Equal(t, first, out, "first FPDU (Fig. 5)")
			// Fig. 6 follows a first FPDU of 492 octets including the
			// initial marker: stand in a 482-octet ULPDU (4+2+482+0+4).
			f = Framer{Markers: true, CRC: true, Offset: 0x1ec}
			out, err = f.AppendFPDU(nil, ddpSend(tc.ctrl, 2))
			require.NoError(t, err)
			hdr := hex.EncodeToString(ddpSend(tc.ctrl, 2)[:18])
			second := unhex(t, "002a"+hdr+"00000014"+strings.Repeat("00", 24)+tc.crc2)
			require.Equal(t, second, out, "second FPDU (Fig. 6), marker at 0x200 with FPDUPTR 20")
			require.Equal(t, uint32(0x1ec+len(second)), f.Offset)
		})
	}
}

// TestDerivedVectors checks the digest's Appendix Z vectors: a marker
// between PAD and CRC, a zero marker between FPDUs, a full-size FPDU with
// three markers, and an FPDU without markers.
func TestDerivedVectors(t *testing.T) {
	f := Framer{Markers: true, CRC: true}
	u := make([]byte, 505)
	for i := range u {
		u[i] = byte(i)
	}
	a, err := f.AppendFPDU(nil, u)
	require.NoError(t, err)
	require.Len(t, a, 520, "Z.3a")
	require.Equal(t, unhex(t, "f2f3f4f5f6f7f8 00 000001fc 53a8e8ed"), a[0x1f8:], "Z.3a tail: PAD, marker FPDUPTR 508, CRC")

	b, err := f.AppendFPDU(nil, bytes.Repeat([]byte{0xa5}, 498))
	require.NoError(t, err)
	require.Len(t, b, 504, "Z.3b first FPDU ends at 1024")
	require.Equal(t, uint32(1024), f.Offset)
	c, err := f.AppendFPDU(nil, unhex(t, "0102030405060708090a0b0c0d0e0f10"))
	require.NoError(t, err)
	require.Equal(t, unhex(t, "00000000 0010 0102030405060708090a0b0c0d0e0f10 0000 f9731fca"), c, "Z.3b")

	f = Framer{Markers: true, CRC: true}
	d, err := f.AppendFPDU(nil, make([]byte, 1442))
	require.NoError(t, err)
	require.Len(t, d, 1460, "Z.3c")
	require.Equal(t, unhex(t, "00000000"), d[0:4])
	require.Equal(t, unhex(t, "000001fc"), d[512:516])
	require.Equal(t, unhex(t, "000003fc"), d[1024:1028])
	require.Equal(t, unhex(t, "3f549c7a"), d[1456:])

	f = Framer{CRC: true}
	e, err := f.AppendFPDU(nil, ddpSend(0x4143, 1))
	require.NoError(t, err)
	require.Equal(t, unhex(t, "002a4143"+strings.Repeat("00", 8)+"00000001"+strings.Repeat("00", 28)+"b7243ec3"), e, "Z.3d")
}

func TestCRC32c(t *testing.T) {
	require.Equal(t, uint32(0xE3069283), CRC32c([]byte("123456789")))
	// The residue over covered octets plus their little-endian CRC field.
	f := Framer{CRC: true}
	out, err := f.AppendFPDU(nil, []byte("residue check"))
	require.NoError(t, err)
	require.Equal(t, uint32(CRCResidue), CRC32c(out))
}

// TestStartupFrameVectors checks the digest's example frames (R51, R57, R58).
func TestStartupFrameVectors(t *testing.T) {
	req := Frame{CRC: true, Rev: Rev1}
	b, err := req.Append(nil)
	require.NoError(t, err)
	require.Equal(t, unhex(t, "4d504120494420526571204672616d65 40 01 0000"), b)
	rep := Frame{Reply: true, CRC: true, Reject: true, Rev: Rev1, PrivateData: []byte("no")}
	b, err = rep.Append(nil)
	require.NoError(t, err)
	require.Equal(t, unhex(t, "4d504120494420526570204672616d65 60 01 0002 6e6f"), b)
	// What Linux siw 6.1 sends (notes): flags 0x10, Rev 2, PD 00 01 00 01.
	siw := unhex(t, "4d504120494420526571204672616d65 10 02 0004 00010001")
	f, n, err := ParseFrame(siw, MaxPrivateData)
	require.NoError(t, err)
	require.Equal(t, len(siw), n)
	require.True(t, f.Enhanced)
	require.False(t, f.CRC || f.Markers || f.Reject || f.Reply)
	e, err := ParseEnhancedPD(f.PrivateData)
	require.NoError(t, err)
	require.Equal(t, EnhancedPD{IRD: 1, ORD: 1}, e)
}
