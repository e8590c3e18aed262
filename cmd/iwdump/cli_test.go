package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/internal/pcapio"
)

// events parses -json output into one map per line.
func events(t testing.TB, out string) []map[string]any {
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		evs = append(evs, m)
	}
	return evs
}

func ofKind(evs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if e["kind"] == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestJSONFields checks, field by field, the FPDUs and startup frames the
// committed captures decode to.
func TestJSONFields(t *testing.T) {
	decode := func(name string) []map[string]any {
		out, _, _ := iwdump(t, nil, "-json", capturePath(name))
		return events(t, out)
	}
	mc, rev0, siw, bad := decode("markers-crc"), decode("rev0"), decode("rev2-siw"), decode("bad-crc")
	type want map[string]any
	for _, tc := range []struct {
		name string
		ev   map[string]any
		want want
		not  []string // fields that must be absent
	}{
		{"connection", ofKind(mc, "connection")[0], want{"conn": 1.0, "frame": 4.0, "client": "127.0.0.1:40001",
			"server": "127.0.0.1:5001", "initiator": "127.0.0.1:40001", "responder": "127.0.0.1:5001", "syn": true}, nil},
		{"request", ofKind(mc, "request")[0], want{"from": "initiator", "rev": 1.0, "m": true, "c": true, "r": false,
			"enhanced": false, "pd_length": 19.0, "private_data": hex.EncodeToString([]byte("openiwarp initiator")),
			"src": "127.0.0.1:40001", "dst": "127.0.0.1:5001"}, []string{"ird", "ord", "p2p", "rtr"}},
		{"reply", ofKind(mc, "reply")[0], want{"from": "responder", "rev": 1.0, "m": true, "c": true, "r": false, "pd_length": 12.0}, nil},
		{"negotiated", ofKind(mc, "negotiated")[0], want{"rev": 1.0, "ddp_version": 1.0, "crc_enabled": true,
			"markers_i2r": true, "markers_r2i": true, "rejected": false}, nil},
		{"send", ofKind(mc, "fpdu")[0], want{"offset": 0.0, "wire_len": 40.0, "ulpdu_length": 30.0, "markers": 1.0,
			"crc": "ok", "tagged": false, "last": true, "qn": 0.0, "msn": 1.0, "mo": 0.0, "opcode": 3.0,
			"opcode_name": "Send", "ddp_version": 1.0, "rdmap_version": 1.0, "payload_len": 12.0,
			"ulpdu": "414300000000000000000000000100000000" + hex.EncodeToString([]byte("hello, iWARP"))},
			[]string{"stag", "to", "crc_expected", "term_layer"}},
		{"write across markers", ofKind(mc, "fpdu")[2], want{"offset": 40.0, "wire_len": 1028.0, "markers": 2.0,
			"tagged": true, "last": true, "stag": float64(0xabcd), "to": 16.0, "opcode": 0.0, "opcode_name": "RDMA Write"},
			[]string{"qn", "msn", "mo"}},
		{"read request", ofKind(mc, "fpdu")[3], want{"qn": 1.0, "opcode": 1.0, "opcode_name": "RDMA Read Request",
			"sink_stag": float64(0x1000), "sink_to": float64(0x2000), "read_size": 600.0, "src_stag": float64(0xabcd), "src_to": 16.0}, nil},
		{"read response not last", ofKind(mc, "fpdu")[4], want{"from": "responder", "offset": 32.0, "tagged": true,
			"last": false, "opcode": 2.0, "opcode_name": "RDMA Read Response"}, nil},
		{"send with invalidate", ofKind(mc, "fpdu")[6], want{"opcode": 4.0, "inval_stag": float64(0x1000)}, nil},
		{"full-size send", ofKind(mc, "fpdu")[7], want{"offset": 1148.0, "ulpdu_length": 1442.0, "wire_len": 1460.0, "markers": 3.0}, nil},
		{"rev0 send", ofKind(rev0, "fpdu")[0], want{"ddp_version": 0.0, "rdmap_version": 0.0, "markers": 1.0, "crc": "ok"}, nil},
		{"rev0 negotiated", ofKind(rev0, "negotiated")[0], want{"rev": 0.0, "ddp_version": 0.0, "crc_enabled": true,
			"markers_i2r": true, "markers_r2i": true}, nil},
		{"rev2 request", ofKind(siw, "request")[0], want{"rev": 2.0, "enhanced": true, "m": false, "c": false,
			"ird": 16.0, "ord": 16.0, "p2p": true, "rtr": []any{"write"}, "ulp_data": "", "pd_length": 4.0}, nil},
		{"rev2 reply", ofKind(siw, "reply")[0], want{"ird": 16.0, "ord": 8.0, "p2p": true, "rtr": []any{"write"}}, nil},
		{"rev2 RTR write", ofKind(siw, "fpdu")[0], want{"crc": "off", "markers": 0.0, "ulpdu_length": 14.0,
			"payload_len": 0.0, "opcode": 0.0, "tagged": true}, nil},
		{"bad CRC", ofKind(bad, "fpdu")[1], want{"offset": 32.0, "crc": "bad", "crc_field": "0x3bc6bc6c",
			"crc_expected": "0xe68316d4", "wire_len": 624.0, "opcode": 0.0, "stag": float64(0x77)}, nil},
		{"CRC error", ofKind(bad, "error")[0], want{"offset": 32.0, "code": 2.0, "from": "initiator"}, nil},
		{"terminate", ofKind(bad, "fpdu")[2], want{"from": "responder", "qn": 2.0, "opcode": 7.0, "opcode_name": "Terminate",
			"term_layer": 2.0, "term_layer_name": "LLP", "term_etype": 0.0, "term_type_name": "LLP MPA Error",
			"term_code": 2.0, "term_code_name": "MPA CRC error", "term_layout": "RFC"}, []string{"term_hdrs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.want {
				assert.Equal(t, v, tc.ev[k], "field %q", k)
			}
			for _, k := range tc.not {
				assert.NotContains(t, tc.ev, k)
			}
		})
	}
	// The FPDU after a CRC error is not decoded on that direction (RFC
	// 5044 §8); the bad FPDU comes first, then the error, in that order.
	var kinds []string
	for _, e := range bad {
		if e["from"] == "initiator" && (e["kind"] == "fpdu" || e["kind"] == "error") {
			kinds = append(kinds, e["kind"].(string))
		}
	}
	assert.Equal(t, []string{"fpdu", "fpdu", "error"}, kinds)
	assert.Contains(t, ofKind(bad, "error")[0]["error"], "crc error")
}

func TestNotesForSkippedConnections(t *testing.T) {
	out, _, code := iwdump(t, nil, "-json", capturePath("not-mpa"))
	assert.Equal(t, 0, code)
	evs := events(t, out)
	require.Len(t, evs, 1)
	assert.Equal(t, "note", evs[0]["kind"])
	assert.Contains(t, evs[0]["note"], "is not MPA")
	out, _, code = iwdump(t, nil, "-json", capturePath("rejected"))
	assert.Equal(t, 0, code)
	evs = events(t, out)
	assert.Equal(t, true, ofKind(evs, "reply")[0]["r"])
	assert.Equal(t, true, ofKind(evs, "negotiated")[0]["rejected"])
	assert.Empty(t, ofKind(evs, "fpdu"))
}

func TestUsageAndBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(capturePath("markers-crc"))
	require.NoError(t, err)
	trunc := filepath.Join(dir, "truncated.pcap")
	require.NoError(t, os.WriteFile(trunc, good[:len(good)-700], 0o644))
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a capture file at all"), 0o644))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))

	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stderr string // substring
		last   string // substring of the last line of stdout
	}{
		{"help", []string{"-h"}, "", 0, "usage: iwdump", ""},
		{"no args", nil, "", 2, "expected exactly one input", ""},
		{"two files", []string{"a", "b"}, "", 2, "expected exactly one input", ""},
		{"unknown flag", []string{"-bogus", "x"}, "", 2, "flag provided but not defined", ""},
		{"stream and encode", []string{"-stream", "-encode"}, "", 2, "exclude each other", ""},
		{"no-startup alone", []string{"-no-startup", "f"}, "", 2, "-no-startup needs -stream", ""},
		{"markers on a capture", []string{"-markers", "f"}, "", 2, "negotiated by its startup frames", ""},
		{"crc on a capture", []string{"-crc=false", "f"}, "", 2, "negotiated by its startup frames", ""},
		{"encode json", []string{"-encode", "-json"}, "", 2, "-json does not apply", ""},
		{"encode with file", []string{"-encode", "f"}, "", 2, "takes no file argument", ""},
		{"bad chunk", []string{"-stream", "-chunk", "0", "-"}, "", 2, "-chunk must be at least 1", ""},
		{"bad bool", []string{"-stream", "-crc=maybe", "-"}, "", 2, "invalid boolean", ""},
		{"missing file", []string{filepath.Join(dir, "nope.pcap")}, "", 1, "no such file", ""},
		{"not a capture", []string{garbage}, "", 1, "1 decode error", "neither pcap nor pcapng"},
		{"empty capture", []string{empty}, "", 1, "decode error", "file too short"},
		{"truncated capture", []string{trunc}, "", 1, "decode error", "file ends inside"},
		{"garbage stream", []string{"-stream", "-"}, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1, "decode error", "not an MPA Request or Reply key"},
		{"empty stream", []string{"-stream", "-"}, "", 1, "decode error", "no MPA startup frame"},
		{"stream cut in startup", []string{"-stream", "-"}, "MPA ID Req Frame\x40\x01\x00\x10abc", 1, "decode error", "inside its MPA startup frame"},
		{"garbage FPDU stream", []string{"-stream", "-no-startup", "-"}, strings.Repeat("\xff", 100), 1, "decode error", "ULPDU_Length"},
		{"stream cut in FPDU", []string{"-stream", "-no-startup", "-crc=false", "-"}, "\x00\x10abc", 1, "decode error", "ERROR"},
		{"encode bad hex", []string{"-encode"}, "41zz\n", 1, "line 1: not a hex string", ""},
		{"encode too long", []string{"-encode"}, strings.Repeat("00", mpa.MaxULPDULength+1) + "\n", 1, "line 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := iwdump(t, []byte(tc.stdin), tc.args...)
			assert.Equal(t, tc.code, code, "stdout %q stderr %q", out, stderr)
			assert.Contains(t, stderr, tc.stderr)
			if tc.last != "" {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				assert.Contains(t, lines[len(lines)-1], tc.last)
			}
		})
	}
}

// TestTruncatedCaptureKeepsWhatDecoded: FPDUs before the damage are still
// reported, and the last JSON line is the error.
func TestTruncatedCaptureKeepsWhatDecoded(t *testing.T) {
	good, err := os.ReadFile(capturePath("markers-crc"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "cut.pcap")
	require.NoError(t, os.WriteFile(path, good[:len(good)-1600], 0o644))
	out, _, code := iwdump(t, nil, "-json", path)
	assert.Equal(t, 1, code)
	evs := events(t, out)
	assert.Len(t, ofKind(evs, "fpdu"), 7)
	assert.Equal(t, "error", evs[len(evs)-1]["kind"])
}

// TestEncodeStreamRoundTrip pipes random ULPDUs through -encode and back
// through -stream -no-startup, for every marker/CRC setting and several
// read sizes, and checks each ULPDU, offset and CRC status.
func TestEncodeStreamRoundTrip(t *testing.T) {
	seed := uint64(rand.Uint32())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	var in strings.Builder
	var ulpdus [][]byte
	for range 40 {
		n := 1 + rng.IntN(1500)
		if rng.IntN(10) == 0 {
			n = 1 + rng.IntN(mpa.MaxULPDULength)
		}
		u := make([]byte, n)
		for i := range u {
			u[i] = byte(rng.Uint32())
		}
		ulpdus = append(ulpdus, u)
		in.WriteString(hex.EncodeToString(u) + "\n")
	}
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			flags := []string{"-markers=" + boolStr(markers), "-crc=" + boolStr(crc)}
			stream, stderr, code := iwdump(t, []byte(in.String()), append([]string{"-encode"}, flags...)...)
			require.Equal(t, 0, code, stderr)
			// The stream is what golden/mpa's Framer emits.
			f := mpa.Framer{Markers: markers, CRC: crc}
			var want []byte
			for _, u := range ulpdus {
				var err error
				want, err = f.AppendFPDU(want, u)
				require.NoError(t, err)
			}
			require.Equal(t, want, []byte(stream))
			for _, chunk := range []string{"1", "7", "4096"} {
				if chunk == "1" && markers && crc { // one slow pass is enough
					continue
				}
				out, stderr, code := iwdump(t, []byte(stream), append([]string{"-stream", "-no-startup", "-json", "-chunk", chunk}, append(flags, "-")...)...)
				require.Equal(t, 0, code, stderr)
				evs := ofKind(events(t, out), "fpdu")
				require.Len(t, evs, len(ulpdus))
				var off uint32
				for i, e := range evs {
					assert.Equal(t, hex.EncodeToString(ulpdus[i]), e["ulpdu"], "ULPDU %d (markers %v, crc %v, chunk %s)", i, markers, crc, chunk)
					assert.Equal(t, float64(off), e["offset"], "ULPDU %d", i)
					assert.Equal(t, map[bool]string{true: "ok", false: "off"}[crc], e["crc"])
					off += uint32(mpa.FPDUWireLen(off, markers, len(ulpdus[i])))
				}
			}
		}
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// directions reassembles a capture into its raw per-direction streams.
func directions(t testing.TB, file []byte) [2][]byte {
	r, err := pcapio.NewReader(bytes.NewReader(file))
	require.NoError(t, err)
	var out [2][]byte
	a := pcapio.NewAssembler(pcapio.AssemblerConfig{Data: func(s *pcapio.Stream, p []byte, _ int) {
		out[s.Dir] = append(out[s.Dir], p...)
	}})
	for {
		pk, err := r.Next()
		if err != nil {
			break
		}
		seg, err := pcapio.DecodeTCP(pk.LinkType, pk.Data)
		require.NoError(t, err)
		require.NoError(t, a.Add(&seg, pk.Index))
	}
	a.Flush()
	return out
}

// TestStreamMatchesCapture feeds each direction of the committed captures
// to -stream (from its startup frame) and checks the FPDUs equal those of
// capture mode.
func TestStreamMatchesCapture(t *testing.T) {
	for _, tc := range []struct {
		name            string
		markers         [2]bool // per direction: initiator's, responder's FPDUs
		crc             bool
		explicitMarkers bool
	}{
		{"markers-crc", [2]bool{true, true}, true, true},
		{"crc-only", [2]bool{false, false}, true, true},
		{"rev0", [2]bool{true, true}, true, false}, // Rev 0 turns both on by itself
		{"rev2-siw", [2]bool{false, false}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, err := os.ReadFile(capturePath(tc.name))
			require.NoError(t, err)
			out, _, code := iwdump(t, nil, "-json", capturePath(tc.name))
			require.Equal(t, 0, code)
			all := ofKind(events(t, out), "fpdu")
			streams := directions(t, file)
			for dir, from := range []string{"initiator", "responder"} {
				args := []string{"-stream", "-json", "-chunk", "13"}
				if tc.explicitMarkers {
					args = append(args, "-markers="+boolStr(tc.markers[dir]), "-crc="+boolStr(tc.crc))
				}
				sout, stderr, code := iwdump(t, streams[dir], append(args, "-")...)
				require.Equal(t, 0, code, stderr)
				sev := events(t, sout)
				assert.Equal(t, []string{"request", "reply"}[dir], sev[0]["kind"])
				var want []map[string]any
				for _, e := range all {
					if e["from"] == from {
						for _, k := range []string{"conn", "frame", "from", "src", "dst"} {
							delete(e, k)
						}
						want = append(want, e)
					}
				}
				assert.Equal(t, want, ofKind(sev, "fpdu"), "direction %s", from)
			}
		})
	}
}

// TestCaptureVariants re-encodes a committed capture as pcapng with Linux
// cooked (SLL2) framing, with segments reordered and retransmitted, and
// checks the decoded FPDUs do not change; then drops a segment and checks
// the gap is reported.
func TestCaptureVariants(t *testing.T) {
	file, err := os.ReadFile(capturePath("markers-crc"))
	require.NoError(t, err)
	r, err := pcapio.NewReader(bytes.NewReader(file))
	require.NoError(t, err)
	var frames [][]byte
	for {
		pk, err := r.Next()
		if err != nil {
			break
		}
		// Ethernet -> SLL2: protocol type, 18 more octets of header.
		sll2 := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(pk.Data[12:]))
		sll2 = append(sll2, make([]byte, 18)...)
		frames = append(frames, append(sll2, pk.Data[14:]...))
	}
	fpdus := func(frames [][]byte) ([]map[string]any, int, string) {
		path := filepath.Join(t.TempDir(), "v.pcapng")
		require.NoError(t, os.WriteFile(path, pcapngFile(frames), 0o644))
		out, _, code := iwdump(t, nil, "-json", path)
		evs := events(t, out)
		for _, e := range evs {
			delete(e, "frame")
		}
		return ofKind(evs, "fpdu"), code, out
	}
	base, code, _ := fpdus(frames)
	require.Equal(t, 0, code)
	require.Len(t, base, 8)

	// Frames 8 and 9 (both from the Initiator) swapped, frame 6 sent twice.
	mixed := append([][]byte{}, frames[:7]...)
	mixed = append(mixed, frames[8], frames[7], frames[5])
	mixed = append(mixed, frames[9:]...)
	got, code, _ := fpdus(mixed)
	assert.Equal(t, 0, code)
	assert.Equal(t, base, got)

	// Frame 8 (the RDMA Write) lost.
	lost := append(append([][]byte{}, frames[:7]...), frames[8:]...)
	got, code, out := fpdus(lost)
	assert.Equal(t, 1, code)
	assert.True(t, strings.Contains(out, `"error":"1028 octets missing from the capture`), "gap reported")
	assert.Len(t, got, 4, "FPDUs before the gap, and the Responder's, still decode")

	// A tiny reassembly bound stops on the reordered capture with a clear error.
	path := filepath.Join(t.TempDir(), "m.pcapng")
	require.NoError(t, os.WriteFile(path, pcapngFile(mixed), 0o644))
	out, _, code = iwdump(t, nil, "-json", "-max-mem", "40", path)
	assert.Equal(t, 1, code)
	evs := events(t, out)
	last := evs[len(evs)-1]
	assert.Equal(t, "error", last["kind"])
	assert.Contains(t, last["error"], "frame 8: pcapio: 127.0.0.1:40001 -> 127.0.0.1:5001: 52 octets held out of order")
	assert.Contains(t, last["error"], "exceed the reassembly bound of 40 octets")
}

// pcapngFile writes frames as a little-endian pcapng file with one SLL2
// interface.
func pcapngFile(frames [][]byte) []byte {
	le := binary.LittleEndian
	var b []byte
	block := func(typ uint32, body []byte) {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		b = le.AppendUint32(b, typ)
		b = le.AppendUint32(b, uint32(12+len(body)))
		b = append(b, body...)
		b = le.AppendUint32(b, uint32(12+len(body)))
	}
	shb := le.AppendUint32(nil, 0x1A2B3C4D)
	shb = le.AppendUint16(shb, 1)
	shb = le.AppendUint16(shb, 0)
	block(0x0A0D0D0A, le.AppendUint64(shb, ^uint64(0)))
	block(1, le.AppendUint32(le.AppendUint32(nil, uint32(pcapio.LinkSLL2)), 0))
	for i, f := range frames {
		epb := le.AppendUint32(nil, 0)
		epb = le.AppendUint32(epb, 0)
		epb = le.AppendUint32(epb, uint32(i))
		epb = le.AppendUint32(epb, uint32(len(f)))
		epb = le.AppendUint32(epb, uint32(len(f)))
		block(6, append(epb, f...))
	}
	return b
}

// TestInterleavedConnections merges two committed captures packet by
// packet into one file: each connection must decode exactly as it does
// alone.
func TestInterleavedConnections(t *testing.T) {
	read := func(name string) [][]byte {
		b, err := os.ReadFile(capturePath(name))
		require.NoError(t, err)
		r, err := pcapio.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		var out [][]byte
		for {
			pk, err := r.Next()
			if err != nil {
				return out
			}
			out = append(out, append([]byte(nil), pk.Data...))
		}
	}
	names := []string{"markers-crc", "rev2-siw", "not-mpa"}
	var parts [][][]byte
	for _, n := range names {
		parts = append(parts, read(n))
	}
	var merged bytes.Buffer
	w, err := pcapio.NewWriter(&merged, pcapio.LinkEthernet)
	require.NoError(t, err)
	for i := 0; ; i++ {
		wrote := false
		for _, p := range parts {
			if i < len(p) {
				require.NoError(t, w.WritePacket(captureEpoch, p[i]))
				wrote = true
			}
		}
		if !wrote {
			break
		}
	}
	path := filepath.Join(t.TempDir(), "merged.pcap")
	require.NoError(t, os.WriteFile(path, merged.Bytes(), 0o644))
	out, stderr, code := iwdump(t, nil, "-json", path)
	require.Equal(t, 0, code, stderr)
	byConn := map[float64][]map[string]any{}
	for _, e := range events(t, out) {
		c := e["conn"].(float64)
		delete(e, "conn")
		delete(e, "frame")
		byConn[c] = append(byConn[c], e)
	}
	require.Len(t, byConn, 3)
	for i, n := range names {
		alone, _, _ := iwdump(t, nil, "-json", capturePath(n))
		want := events(t, alone)
		for _, e := range want {
			delete(e, "conn")
			delete(e, "frame")
			if e["kind"] == "note" { // names its connection number
				e["note"] = strings.Replace(e["note"].(string), "connection 1 ", "connection 3 ", 1)
			}
		}
		assert.Equal(t, want, byConn[float64(i+1)], "connection %d (%s)", i+1, n)
	}
}

// TestStreamFramingErrors corrupts an encoded stream three ways and checks
// the error kind, RFC 5044 §8 code and offset iwdump reports.
func TestStreamFramingErrors(t *testing.T) {
	f := mpa.Framer{Markers: true, CRC: true}
	var s []byte
	for i := range 4 {
		var err error
		s, err = f.AppendFPDU(s, pattern(300, byte(i)))
		require.NoError(t, err)
	}
	// Stream offsets of the four FPDUs.
	var offs []uint32
	var off uint32
	for range 4 {
		offs = append(offs, off)
		off += uint32(mpa.FPDUWireLen(off, true, 300))
	}
	corrupt := func(i int, x byte) []byte {
		b := append([]byte(nil), s...)
		b[i] ^= x
		return b
	}
	for _, tc := range []struct {
		name  string
		in    []byte
		flags []string
		code  float64
		off   uint32
		fpdus int // FPDUs reported before the error (a bad-CRC one included)
		msg   string
	}{
		{"CRC", corrupt(int(offs[2])+100, 0x40), []string{"-markers"}, 2, offs[2], 3, "crc error"},
		// The marker at 512 lies inside the second FPDU; break its pointer
		// with CRC checking off so that only the marker check can see it.
		{"marker", corrupt(512+3, 0x10), []string{"-markers", "-crc=false"}, 3, offs[1], 1, "marker"},
		{"length", corrupt(int(offs[1]), 0xff), []string{"-markers", "-crc=false"}, 3, offs[1], 1, "ULPDU_Length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, code := iwdump(t, tc.in, append([]string{"-stream", "-no-startup", "-json"}, append(tc.flags, "-")...)...)
			assert.Equal(t, 1, code)
			evs := events(t, out)
			require.NotEmpty(t, evs)
			last := evs[len(evs)-1]
			assert.Equal(t, "error", last["kind"])
			assert.Equal(t, tc.code, last["code"])
			assert.Equal(t, float64(tc.off), last["offset"])
			assert.Contains(t, last["error"], tc.msg)
			assert.Len(t, ofKind(evs, "fpdu"), tc.fpdus)
			if tc.name == "CRC" {
				bad := ofKind(evs, "fpdu")[2]
				assert.Equal(t, "bad", bad["crc"])
				assert.Equal(t, float64(offs[2]), bad["offset"])
			}
		})
	}
}

// TestSkippedPacketNotes: packets iwdump cannot follow get one note per
// reason (with the first frame) and a count; packets that are simply not
// TCP pass silently.
func TestSkippedPacketNotes(t *testing.T) {
	seg := pcapio.Segment{Src: netip.MustParseAddrPort("198.18.0.1:1"), Dst: netip.MustParseAddrPort("198.18.0.2:2"), Flags: pcapio.FlagACK, Payload: []byte("x")}
	frame, err := pcapio.AppendFrame(nil, &seg, true)
	require.NoError(t, err)
	frag := append([]byte(nil), frame...)
	frag[14+6] = 0x20 // IPv4 More Fragments
	udp := append([]byte(nil), frame...)
	udp[14+9] = 17
	var file bytes.Buffer
	w, err := pcapio.NewWriter(&file, pcapio.LinkEthernet)
	require.NoError(t, err)
	for _, f := range [][]byte{udp, frag, frag, frame[:40], frag} {
		require.NoError(t, w.WritePacket(captureEpoch, f))
	}
	path := filepath.Join(t.TempDir(), "odd.pcap")
	require.NoError(t, os.WriteFile(path, file.Bytes(), 0o644))
	out, _, code := iwdump(t, nil, path)
	assert.Equal(t, 0, code)
	assert.Equal(t, `note: frame 2 not decoded: IPv4: IP fragment: 198.18.0.1 -> 198.18.0.2 offset 0
note: frame 4 not decoded: IPv4: packet truncated: total length 41, captured 26
note: 3 packets in all not decoded: IPv4 IP fragment
note: odd.pcap: no TCP connection in the capture
`, strings.ReplaceAll(out, filepath.Dir(path)+"/", ""))
}

// TestIPv6Capture records an exchange over [::1] and decodes it: the same
// FPDUs as over IPv4, with IPv6 addresses.
func TestIPv6Capture(t *testing.T) {
	sc := scenarios()[0]
	sc.ipv6 = true
	path := filepath.Join(t.TempDir(), "v6.pcap")
	require.NoError(t, os.WriteFile(path, record(t, sc), 0o644))
	out, stderr, code := iwdump(t, nil, "-json", path)
	require.Equal(t, 0, code, stderr)
	v6 := events(t, out)
	assert.Equal(t, "[::1]:40001", ofKind(v6, "connection")[0]["initiator"])
	v4out, _, _ := iwdump(t, nil, "-json", capturePath(sc.name))
	v4 := ofKind(events(t, v4out), "fpdu")
	got := ofKind(v6, "fpdu")
	require.Len(t, got, len(v4))
	for i := range v4 {
		for _, k := range []string{"src", "dst"} {
			delete(v4[i], k)
			delete(got[i], k)
		}
	}
	assert.Equal(t, v4, got)
}

// TestCorruptedCaptureStopsDirection flips one ULPDU bit in frame 8 of the
// markers-crc capture: that FPDU is shown with "crc":"bad", the error
// follows, the Initiator's later FPDUs are not decoded (RFC 5044 §8) but
// counted, and the Responder's direction decodes on. The capture is read
// from stdin.
func TestCorruptedCaptureStopsDirection(t *testing.T) {
	file, err := os.ReadFile(capturePath("markers-crc"))
	require.NoError(t, err)
	r, err := pcapio.NewReader(bytes.NewReader(file))
	require.NoError(t, err)
	var out bytes.Buffer
	w, err := pcapio.NewWriter(&out, pcapio.LinkEthernet)
	require.NoError(t, err)
	for {
		pk, err := r.Next()
		if err != nil {
			break
		}
		data := append([]byte(nil), pk.Data...)
		if pk.Index == 8 {
			data[len(data)-100] ^= 0x80
		}
		require.NoError(t, w.WritePacket(pk.Time, data))
	}
	stdout, _, code := iwdump(t, out.Bytes(), "-json", "-")
	assert.Equal(t, 1, code)
	evs := events(t, stdout)
	var ini, res []string
	for _, e := range evs {
		switch e["from"] {
		case "initiator":
			ini = append(ini, e["kind"].(string)+":"+fmt.Sprint(e["crc"]))
		case "responder":
			res = append(res, e["kind"].(string)+":"+fmt.Sprint(e["crc"]))
		}
	}
	assert.Equal(t, []string{"request:<nil>", "fpdu:ok", "fpdu:bad", "error:<nil>", "note:<nil>"}, ini)
	assert.Equal(t, []string{"reply:<nil>", "fpdu:ok", "fpdu:ok", "fpdu:ok"}, res)
	note := evs[len(evs)-1]
	assert.Equal(t, "note", note["kind"])
	assert.Contains(t, note["note"], "1540 more octets in this direction not decoded")
}
