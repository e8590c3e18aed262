package ddp

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControlByte(t *testing.T) {
	for _, tc := range []struct {
		tagged, last bool
		v            Version
		want         byte
	}{
		{true, true, Version1, 0xC1},
		{true, false, Version1, 0x81},
		{false, true, Version1, 0x41},
		{false, false, Version1, 0x01},
		{true, true, VersionRDMAC, 0xC0},
		{false, false, VersionRDMAC, 0x00},
	} {
		c := NewControl(tc.tagged, tc.last, tc.v)
		assert.Equal(t, tc.want, byte(c), "%+v", tc)
		assert.Equal(t, tc.tagged, c.Tagged())
		assert.Equal(t, tc.last, c.Last())
		assert.Equal(t, tc.v, c.Version())
	}
	// Reserved bits are ignored on receive.
	c := Control(0xC1 | byte(ControlRsvd))
	assert.True(t, c.Tagged())
	assert.True(t, c.Last())
	assert.Equal(t, Version1, c.Version())
	assert.Equal(t, "TL DV=1", Control(0xC1).String())
	assert.Equal(t, "U- DV=0", Control(0x00).String())
}

func TestTaggedLayout(t *testing.T) {
	f := TaggedFields{Last: true, Version: Version1, RsvdULP: 0x40, STag: 0x11223344, TO: 0x0102030405060708}
	b := f.Append(nil)
	require.Len(t, b, TaggedHeaderLen)
	assert.Equal(t, []byte{0xC1, 0x40, 0x11, 0x22, 0x33, 0x44, 1, 2, 3, 4, 5, 6, 7, 8}, b)
	h := Tagged(b)
	assert.Equal(t, f, h.Fields())
	assert.Equal(t, uint32(0x11223344), h.STag())
	assert.Equal(t, uint64(0x0102030405060708), h.TO())
	assert.Equal(t, uint8(0x40), h.RsvdULP())
}

func TestUntaggedLayout(t *testing.T) {
	f := UntaggedFields{Version: Version1, RsvdULP0: 0x44, RsvdULP1: 0xAABBCCDD, QN: 0, MSN: 0x01020304, MO: 0x05060708}
	b := f.Append(nil)
	require.Len(t, b, UntaggedHeaderLen)
	assert.Equal(t, []byte{0x01, 0x44, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, b)
	h := Untagged(b)
	assert.Equal(t, f, h.Fields())
	f.Last, f.QN = true, 2
	b = f.Append(b[:0])
	assert.Equal(t, byte(0x41), b[0])
	assert.Equal(t, uint32(2), Untagged(b).QN())
}

func TestParse(t *testing.T) {
	tagged := append(TaggedFields{Version: Version1, STag: 7, TO: 9}.Append(nil), "abc"...)
	untagged := append(UntaggedFields{Last: true, Version: Version1, MSN: 1}.Append(nil), "xy"...)
	for _, tc := range []struct {
		name    string
		in      []byte
		hdr     int
		payload string
		err     bool
	}{
		{"tagged", tagged, 14, "abc", false},
		{"tagged empty", tagged[:14], 14, "", false},
		{"tagged short", tagged[:13], 0, "", true},
		{"untagged", untagged, 18, "xy", false},
		{"untagged empty", untagged[:18], 18, "", false},
		{"untagged short", untagged[:17], 0, "", true},
		{"empty", nil, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.in)
			if tc.err {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrShort))
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, len(tc.in), pe.Len)
				return
			}
			require.NoError(t, err)
			assert.Len(t, s.Header, tc.hdr)
			assert.Equal(t, tc.payload, string(s.Payload))
		})
	}
}

func TestSegmentation(t *testing.T) {
	// RFC 5041 §5.2 examples: MULPDU 1500, 2048-byte messages.
	assert.Equal(t, 1482, MaxPayload(1500, UntaggedHeaderLen))
	assert.Equal(t, 1486, MaxPayload(1500, TaggedHeaderLen))
	assert.Equal(t, uint64(2), SegmentCount(2048, 1482))
	assert.Equal(t, uint64(2), SegmentCount(2048, 1486))
	assert.Equal(t, uint64(1), SegmentCount(0, 1486), "zero-length message is one segment")
	assert.Equal(t, uint64(1), SegmentCount(1486, 1486))
	assert.Equal(t, uint64(2), SegmentCount(1487, 1486))
	assert.Equal(t, 0, MaxPayload(10, 14))
}

func FuzzParse(f *testing.F) {
	f.Add([]byte{0xC1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 'x'})
	f.Add(UntaggedFields{Last: true, Version: Version1, RsvdULP0: 0x43, MSN: 1}.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		if len(s.Header)+len(s.Payload) != len(b) {
			t.Fatalf("header %d + payload %d != %d", len(s.Header), len(s.Payload), len(b))
		}
		// Re-encoding the parsed fields gives back the header, except the reserved bits.
		var enc []byte
		if s.Control.Tagged() {
			enc = s.Tagged().Fields().Append(nil)
		} else {
			enc = s.Untagged().Fields().Append(nil)
		}
		want := append([]byte(nil), s.Header...)
		want[0] &^= byte(ControlRsvd)
		if string(enc) != string(want) {
			t.Fatalf("re-encoded %x, want %x", enc, want)
		}
	})
}
