package main

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// rev0ULPDUs are the ULPDUs of rev0Stream: the first opens on the marker
// at SeqStart and spans those at 512 and 1024; the second starts off the
// grid and spans the one at 1536.
var rev0ULPDUs = [][]byte{
	untagged(0, 3, true, 0, 1, 0, pattern(1000, 1)),
	tagged(0, 0, true, 0x77, 16, pattern(700, 2)),
}

// rev0Stream is an FPDU stream from SeqStart, with markers and CRC, as a
// draft-01 (Rev 0) sender may emit it: the markers at 512 and 1024, inside
// an FPDU that opens with a marker, point back at that leading marker
// (FPDUPTR 512, 1024) where RFC 5044 wants the ULPDU_Length field (508,
// 1020). The CRC covers the markers, so it is computed again.
func rev0Stream(t testing.TB) []byte {
	f := mpa.Framer{Markers: true, CRC: true}
	first, err := f.AppendFPDU(nil, rev0ULPDUs[0])
	require.NoError(t, err)
	for _, m := range []int{512, 1024} {
		require.Equal(t, uint16(m-mpa.MarkerLen), binary.BigEndian.Uint16(first[m+2:]), "RFC 5044 pointer before the rewrite")
		binary.BigEndian.PutUint16(first[m+2:], uint16(m))
	}
	end := len(first) - mpa.CRCLen
	binary.LittleEndian.PutUint32(first[end:], mpa.CRC32c(first[:end]))
	s, err := f.AppendFPDU(first, rev0ULPDUs[1])
	require.NoError(t, err)
	return s
}

// startupFrame is the Request or Reply that opens a -stream input.
func startupFrame(t testing.TB, reply bool, rev mpa.Revision) []byte {
	fr := mpa.Frame{Reply: reply, Markers: true, CRC: true, Rev: rev}
	b, err := fr.Append(nil)
	require.NoError(t, err)
	return b
}

// TestRevFlag decodes the same Rev 0 stream under every combination of
// -rev, -no-startup and startup frame: draft-01 pointers decode only when
// the revision spoken is 0, and otherwise stop at the marker with a marker
// error naming the pointer found and the one RFC 5044 wants.
func TestRevFlag(t *testing.T) {
	fpdus := rev0Stream(t)
	withFrame := func(reply bool, rev mpa.Revision) []byte {
		return append(startupFrame(t, reply, rev), fpdus...)
	}
	const markerErr = "marker at stream offset 512 has FPDUPTR 512, want 508"
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  []byte
		code   int
		fpdus  int    // FPDUs decoded
		last   string // substring of the last event's error or note ("" if the last is an FPDU)
		revTxt string // substring of a note about -rev, if any
	}{
		{"no-startup rev 0", []string{"-no-startup", "-rev", "0"}, fpdus, 0, 2, "", ""},
		{"no-startup rev 0 markers and CRC explicit", []string{"-no-startup", "-rev", "0", "-markers", "-crc"}, fpdus, 0, 2, "", ""},
		{"no-startup default rev", []string{"-no-startup", "-markers"}, fpdus, 1, 0, markerErr, ""},
		{"no-startup rev 1", []string{"-no-startup", "-markers", "-rev", "1"}, fpdus, 1, 0, markerErr, ""},
		{"no-startup rev 2", []string{"-no-startup", "-markers", "-rev", "2"}, fpdus, 1, 0, markerErr, ""},
		{"no-startup rev 0 without markers", []string{"-no-startup", "-rev", "0", "-markers=false"}, fpdus, 1, 0, "ULPDU_Length", ""},
		{"rev 0 request", nil, withFrame(false, mpa.Rev0), 0, 2, "", ""},
		{"rev 0 request, -rev 0", []string{"-rev", "0"}, withFrame(false, mpa.Rev0), 0, 2, "", ""},
		{"rev 0 reply", nil, withFrame(true, mpa.Rev0), 0, 2, "", ""},
		{"rev 1 request answered by rev 0", []string{"-rev", "0"}, withFrame(false, mpa.Rev1), 0, 2, "", "which the Reply chose over the Request's 1"},
		{"rev 2 request answered by rev 0", []string{"-rev", "0"}, withFrame(false, mpa.Rev2), 0, 2, "", "revision 0 (-rev)"},
		{"rev 1 request without -rev", []string{"-markers"}, withFrame(false, mpa.Rev1), 1, 0, markerErr, ""},
		{"rev 2 request answered by rev 1", []string{"-rev", "1", "-markers"}, withFrame(false, mpa.Rev2), 1, 0, markerErr, "revision 1 (-rev)"},
		{"rev 1 reply contradicted", []string{"-rev", "0"}, withFrame(true, mpa.Rev1), 1, 0, "-rev 0 contradicts the stream's Reply, which settles revision 1", ""},
		{"rev 0 reply contradicted", []string{"-rev", "1"}, withFrame(true, mpa.Rev0), 1, 0, "contradicts the stream's Reply", ""},
		{"rev 0 request cannot get rev 1", []string{"-rev", "1"}, withFrame(false, mpa.Rev0), 1, 0, "no Reply of revision 1 can answer a revision 0 Request", ""},
		{"rev 1 request cannot get rev 2", []string{"-rev", "2"}, withFrame(false, mpa.Rev1), 1, 0, "no Reply of revision 2 can answer a revision 1 Request", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"-stream", "-json", "-chunk", "100"}, tc.args...), "-")
			out, stderr, code := iwdump(t, tc.stdin, args...)
			assert.Equal(t, tc.code, code, "stderr %q", stderr)
			evs := events(t, out)
			got := ofKind(evs, "fpdu")
			require.Len(t, got, tc.fpdus, "%s", out)
			for i, e := range got {
				assert.Equal(t, hex.EncodeToString(rev0ULPDUs[i]), e["ulpdu"])
				assert.Equal(t, "ok", e["crc"])
			}
			if tc.fpdus == 2 {
				assert.Equal(t, 3.0, got[0]["markers"], "the first FPDU holds the markers at 0, 512 and 1024")
				assert.Equal(t, 0.0, got[0]["ddp_version"])
			}
			last := evs[len(evs)-1]
			if tc.last == "" {
				assert.Equal(t, "fpdu", last["kind"])
			} else {
				assert.Equal(t, "error", last["kind"])
				assert.Contains(t, last["error"], tc.last)
			}
			if tc.revTxt != "" {
				notes := ofKind(evs, "note")
				require.NotEmpty(t, notes)
				assert.Contains(t, notes[0]["note"], tc.revTxt)
			} else {
				assert.Empty(t, ofKind(evs, "note"))
			}
		})
	}
}

// TestRevUsage: -rev applies to -stream only and takes 0, 1 or 2.
func TestRevUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"capture", []string{"-rev", "0", "f.pcap"}, "-rev needs -stream"},
		{"encode", []string{"-encode", "-rev", "0"}, "-rev needs -stream"},
		{"too high", []string{"-stream", "-no-startup", "-rev", "3", "-"}, "-rev must be 0, 1 or 2, got 3"},
		{"negative", []string{"-stream", "-rev", "-1", "-"}, "-rev must be 0, 1 or 2, got -1"},
		{"not a number", []string{"-stream", "-rev", "draft", "-"}, "invalid value \"draft\" for flag -rev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := iwdump(t, nil, tc.args...)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, tc.stderr)
		})
	}
	_, stderr, _ := iwdump(t, nil, "-h")
	assert.Contains(t, stderr, "-rev N")
}
