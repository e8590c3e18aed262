package interop

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// The testdata captures are siw-to-siw rping runs (5 cycles of 4000 octets)
// recorded by this harness: one without CRC, one with.

func TestDecodeSiwRping(t *testing.T) {
	d, err := DecodeTshark(context.Background(), "testdata/siw-rping.pcap")
	require.NoError(t, err)
	require.Equal(t, 1, d.Requests)
	require.Equal(t, 1, d.Replies)
	require.Equal(t, []int{2, 2}, d.Revs)
	require.Equal(t, []bool{false, false}, d.CRCFlags)
	require.Equal(t, 55, d.FPDUs)
	require.Equal(t, 55, d.CRCZero)
	require.Equal(t, map[rdmap.Opcode]int{rdmap.OpSend: 20, rdmap.OpReadRequest: 5, rdmap.OpReadResponse: 15, rdmap.OpWrite: 15}, d.Opcodes)
	assert.Contains(t, d.Summary(), "RDMA Write 15, RDMA Read Request 5, RDMA Read Response 15, Send 20")
	require.NoError(t, d.Check(Expect{Rev: 2, MinOps: rpingOps(5)}))
	require.Error(t, d.Check(Expect{Rev: 2, CRC: true}), "CRC expected but absent")
	require.Error(t, d.Check(Expect{Rev: 1}), "wrong revision")
	require.Error(t, d.Check(Expect{Rev: 2, MinOps: rpingOps(6)}), "too few operations")
	require.Error(t, d.Check(Expect{Rev: 2, Markers: true}), "markers expected")
	require.Error(t, d.Check(Expect{Rev: 2, Reject: true}), "reject expected")
}

func TestDecodeSiwRpingCRC(t *testing.T) {
	d, err := DecodeTshark(context.Background(), "testdata/siw-rping-crc.pcap")
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, d.CRCFlags)
	require.Equal(t, 55, d.Checked)
	require.Equal(t, 0, d.CRCBad)
	require.NoError(t, d.Check(Expect{Rev: 2, CRC: true, MinOps: rpingOps(5)}))
	require.Error(t, d.Check(Expect{Rev: 2}), "CRC present but not expected")
}

// A single flipped CRC octet is reported as a bad CRC.
func TestDecodeDetectsBadCRC(t *testing.T) {
	b, err := os.ReadFile("testdata/siw-rping-crc.pcap")
	require.NoError(t, err)
	d, err := DecodeTshark(context.Background(), "testdata/siw-rping-crc.pcap")
	require.NoError(t, err)
	require.Zero(t, d.CRCBad)
	// The first checked CRC as tshark reports it, found in the file.
	out, err := exec.Command("tshark", "-r", "testdata/siw-rping-crc.pcap", "-Y", "iwarp_mpa.crc_check",
		"-T", "fields", "-e", "iwarp_mpa.crc_check").Output()
	require.NoError(t, err)
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	v, err := strconv.ParseUint(strings.TrimPrefix(first, "0x"), 16, 32)
	require.NoError(t, err, "%q", out)
	crc := binary.BigEndian.AppendUint32(nil, uint32(v))
	i := bytes.Index(b, crc)
	require.Positive(t, i, "CRC %08x not found in the capture", v)
	b = bytes.Clone(b)
	b[i] ^= 0x01
	p := filepath.Join(t.TempDir(), "bad.pcap")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	d, err = DecodeTshark(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, 1, d.CRCBad, "%s", d)
	require.Error(t, d.Check(Expect{Rev: 2, CRC: true}))
	_, err = DecodeIwdump(context.Background(), p)
	require.ErrorContains(t, err, "crc", "iwdump reports the bad CRC too")
}

// Port 7236 belongs to tshark's RTSP dissector; the MPA heuristics must win.
func TestDecodeOnAClaimedPort(t *testing.T) {
	d, err := DecodeTshark(context.Background(), "testdata/example-on-rtsp-port.pcap")
	require.NoError(t, err)
	require.NoError(t, d.Check(Expect{Rev: 2, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 2}}), "%s", d)
}

// iwdump and tshark agree on every committed capture.
func TestIwdumpAgreesWithTshark(t *testing.T) {
	for _, f := range []string{"siw-rping.pcap", "siw-rping-crc.pcap", "example-on-rtsp-port.pcap"} {
		ts, err := DecodeTshark(context.Background(), "testdata/"+f)
		require.NoError(t, err, f)
		own, err := DecodeIwdump(context.Background(), "testdata/"+f)
		require.NoError(t, err, f)
		require.Equal(t, ts.String(), own.String(), f)
	}
}

// siw as Initiator gives up on a Rev 1 Reply: Request Rev 2, Reply Rev 1,
// no FPDU. Both decoders see it so.
func TestDecodeRefusedRev1Reply(t *testing.T) {
	for _, dec := range []func(context.Context, string) (*Decoded, error){DecodeTshark, DecodeIwdump} {
		d, err := dec(context.Background(), "testdata/siw-refuses-rev1-reply.pcap")
		require.NoError(t, err)
		require.Equal(t, []int{2, 1}, d.Revs)
		require.NoError(t, d.Check(Expect{Rev: 2, ReplyRev: 1, NoFPDUs: true}))
		require.Error(t, d.Check(Expect{Rev: 2, NoFPDUs: true}), "the Reply is Rev 1")
		require.Error(t, d.Check(Expect{Rev: 2, ReplyRev: 1, MinOps: map[rdmap.Opcode]int{rdmap.OpSend: 1}}), "no ping data crossed")
	}
}
