package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Decoded is what tshark made of a scenario's capture.
type Decoded struct {
	Requests, Replies int                  // MPA startup frames
	Revs              []int                // revision of each startup frame, in order
	CRCFlags          []bool               // C bit of each startup frame
	MarkerFlags       []bool               // M bit of each startup frame
	RejectFlags       []bool               // R bit of each startup frame
	FPDUs             int                  // FPDUs decoded
	Checked           int                  // FPDUs whose CRC tshark verified (C negotiated)
	Unchecked         int                  // FPDUs of streams without CRC
	CRCZero           int                  // unchecked FPDUs whose CRC field is zero
	CRCBad            int                  // CRC errors tshark reported
	Opcodes           map[rdmap.Opcode]int // FPDUs per RDMAP opcode
	Terminates        int
	Iwdump            string // iwdump's verdict ("" until checked)
}

// DecodeTshark decodes a pcap with tshark's iWARP dissectors and counts
// what it saw. iwarp_mpa is a heuristic TCP dissector (no -d needed); the
// heuristics run first so that a port some other dissector claims (7236 is
// RTSP's) still decodes as MPA.
func DecodeTshark(ctx context.Context, pcap string) (*Decoded, error) {
	fields := []string{"iwarp_mpa.req", "iwarp_mpa.rep", "iwarp_mpa.rev", "iwarp_mpa.crc_flag",
		"iwarp_mpa.marker_flag", "iwarp_mpa.rej_flag", "iwarp_mpa.crc", "iwarp_mpa.crc_check",
		"iwarp_rdma.opcode"}
	args := []string{"-o", "tcp.try_heuristic_first:TRUE", "-r", pcap, "-Y", "iwarp_mpa", "-T", "fields", "-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.CommandContext(ctx, "tshark", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("interop: tshark %s: %w", pcap, err)
	}
	d := &Decoded{Opcodes: map[rdmap.Opcode]int{}}
	// The verdict of tshark's CRC check is only in the field's display
	// text: "CRC check: 0x... (Bad CRC32, should be 0x...)".
	detail, err := exec.CommandContext(ctx, "tshark", "-o", "tcp.try_heuristic_first:TRUE", "-r", pcap, "-Y", "iwarp_mpa", "-O", "iwarp_mpa").Output()
	if err != nil {
		return nil, fmt.Errorf("interop: tshark %s: %w", pcap, err)
	}
	d.CRCBad = strings.Count(string(detail), "(Bad CRC32")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		for len(f) < len(fields) {
			f = append(f, "")
		}
		if f[0] != "" || f[1] != "" {
			if f[0] != "" {
				d.Requests++
			} else {
				d.Replies++
			}
			rev, _ := strconv.Atoi(f[2])
			d.Revs = append(d.Revs, rev)
			d.CRCFlags = append(d.CRCFlags, isTrue(f[3]))
			d.MarkerFlags = append(d.MarkerFlags, isTrue(f[4]))
			d.RejectFlags = append(d.RejectFlags, isTrue(f[5]))
			continue
		}
		// One TCP segment may carry several FPDUs: the fields repeat.
		// tshark shows iwarp_mpa.crc (unchecked) when the stream
		// negotiated no CRC, iwarp_mpa.crc_check (verified, with an
		// expert message if wrong) when it did.
		crcs, checks, ops := splitAgg(f[6]), splitAgg(f[7]), splitAgg(f[8])
		for _, c := range crcs {
			d.FPDUs++
			d.Unchecked++
			if v, _ := strconv.ParseUint(strings.TrimPrefix(c, "0x"), 16, 32); v == 0 {
				d.CRCZero++
			}
		}
		d.FPDUs += len(checks)
		d.Checked += len(checks)
		for _, o := range ops {
			n, err := strconv.ParseUint(strings.TrimPrefix(o, "0x"), 16, 4)
			if err != nil {
				continue
			}
			d.count(rdmap.Opcode(n))
		}
	}
	return d, nil
}

func isTrue(s string) bool { return s == "1" || s == "True" || s == "true" }

func splitAgg(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ";")
}

// count records one FPDU of opcode op.
func (d *Decoded) count(op rdmap.Opcode) {
	d.Opcodes[op]++
	if op == rdmap.OpTerminate {
		d.Terminates++
	}
}

// opcodes lists the opcode counts in opcode order, each as format gives
// it the opcode's name (golden/rdmap's table) and count.
func (d *Decoded) opcodes(format string) []string {
	ops := make([]rdmap.Opcode, 0, len(d.Opcodes))
	for op := range d.Opcodes {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf(format, op, d.Opcodes[op])
	}
	return out
}

// String is a one-line summary for logs and the matrix.
func (d *Decoded) String() string {
	ops := d.opcodes("%v=%d")
	return fmt.Sprintf("MPA req=%d rep=%d rev=%v C=%v M=%v R=%v; FPDUs=%d (CRC checked good=%d bad=%d; no CRC=%d, zero=%d); %s",
		d.Requests, d.Replies, d.Revs, d.CRCFlags, d.MarkerFlags, d.RejectFlags, d.FPDUs,
		d.Checked-d.CRCBad, d.CRCBad, d.Unchecked, d.CRCZero, strings.Join(ops, " "))
}

// Summary is a short verdict for the matrix: FPDUs, CRC status, opcodes.
func (d *Decoded) Summary() string {
	crc := "CRC off"
	if d.Checked > 0 {
		crc = fmt.Sprintf("CRC ok %d, bad %d", d.Checked-d.CRCBad, d.CRCBad)
	}
	ops := d.opcodes("%v %d")
	rej := ""
	for i, r := range d.RejectFlags {
		if r && i > 0 {
			rej = ", rejected"
		}
	}
	return fmt.Sprintf("Rev %v%s; %d FPDUs, %s; %s", d.Revs, rej, d.FPDUs, crc, strings.Join(ops, ", "))
}

// Expect is what a scenario's capture must show.
type Expect struct {
	Rev     int  // MPA revision of every startup frame (0: don't check)
	CRC     bool // CRCs on: every FPDU's CRC non-zero and correct; off: all zero
	Reject  bool // the Reply has R=1 and no FPDU follows
	Markers bool // the Request asked for markers
	// ReplyRev is the Reply's revision when it differs from the Request's.
	ReplyRev int
	// NoFPDUs: the startup frames cross but the Initiator gives up, so no
	// FPDU follows (e.g. siw refusing a Reply below Rev 2).
	NoFPDUs bool
	MinOps  map[rdmap.Opcode]int // at least this many of each RDMAP opcode
}

// Check compares a decoded capture with what the scenario expects.
func (d *Decoded) Check(e Expect) error {
	var errs []string
	if d.Requests < 1 || d.Replies < 1 {
		errs = append(errs, fmt.Sprintf("want an MPA Request and Reply, saw %d and %d", d.Requests, d.Replies))
	}
	for i, r := range d.Revs {
		want := e.Rev
		if i > 0 && e.ReplyRev != 0 {
			want = e.ReplyRev
		}
		if want != 0 && r != want {
			errs = append(errs, fmt.Sprintf("startup frame %d has Rev %d, want %d", i, r, want))
		}
	}
	if len(d.MarkerFlags) > 0 && d.MarkerFlags[0] != e.Markers {
		errs = append(errs, fmt.Sprintf("Request M=%v, want %v", d.MarkerFlags[0], e.Markers))
	}
	rejected := false
	for i, r := range d.RejectFlags {
		if r && i > 0 {
			rejected = true
		}
	}
	if rejected != e.Reject {
		errs = append(errs, fmt.Sprintf("Reply R=%v, want %v", rejected, e.Reject))
	}
	if (e.Reject || e.NoFPDUs) && d.FPDUs > 0 {
		errs = append(errs, fmt.Sprintf("%d FPDUs after a refused startup", d.FPDUs))
	}
	if !e.Reject && !e.NoFPDUs {
		if e.CRC && (d.Unchecked > 0 || d.CRCBad > 0 || d.Checked == 0) {
			errs = append(errs, fmt.Sprintf("CRC on: %d FPDUs checked, %d bad, %d without CRC", d.Checked, d.CRCBad, d.Unchecked))
		}
		if !e.CRC && (d.Checked > 0 || d.CRCZero != d.FPDUs) {
			errs = append(errs, fmt.Sprintf("CRC off: %d of %d FPDUs carry a CRC", d.FPDUs-d.CRCZero, d.FPDUs))
		}
		if d.Terminates > 0 {
			errs = append(errs, fmt.Sprintf("%d Terminate messages", d.Terminates))
		}
	}
	for op, n := range e.MinOps {
		if d.Opcodes[op] < n {
			errs = append(errs, fmt.Sprintf("%v: saw %d, want at least %d", op, d.Opcodes[op], n))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("interop: capture: %s (decoded: %s)", strings.Join(errs, "; "), d)
	}
	return nil
}

// iwdumpEvent is the part of an `iwdump -json` line the checks use.
type iwdumpEvent struct {
	Kind     string `json:"kind"`
	Rev      int    `json:"rev"`
	M, C, R  bool
	CRC      string `json:"crc"`
	CRCField string `json:"crc_field"`
	Opcode   *uint8 `json:"opcode"` // absent when the DDP or RDMAP header did not decode
	Error    string `json:"error"`
}

var iwdumpBuild struct {
	sync.Mutex
	path string
}

// iwdumpPath builds cmd/iwdump once per test process.
func iwdumpPath(ctx context.Context) (string, error) {
	iwdumpBuild.Lock()
	defer iwdumpBuild.Unlock()
	if iwdumpBuild.path != "" {
		return iwdumpBuild.path, nil
	}
	dir, err := os.MkdirTemp("", "oiw-iwdump-")
	if err != nil {
		return "", fmt.Errorf("interop: %w", err)
	}
	out := filepath.Join(dir, "iwdump")
	if err := buildTool(ctx, "./cmd/iwdump", out); err != nil {
		return "", err
	}
	iwdumpBuild.path = out
	return out, nil
}

// RemoveBuiltTools deletes the iwdump binary built by DecodeIwdump (call it
// once the process is done decoding).
func RemoveBuiltTools() {
	iwdumpBuild.Lock()
	defer iwdumpBuild.Unlock()
	if iwdumpBuild.path != "" {
		_ = os.RemoveAll(filepath.Dir(iwdumpBuild.path))
		iwdumpBuild.path = ""
	}
}

// DecodeIwdump decodes a capture with the project's own decoder
// (cmd/iwdump -json) into the same counts as DecodeTshark. Decode errors
// iwdump reports fail it.
func DecodeIwdump(ctx context.Context, pcap string) (*Decoded, error) {
	bin, err := iwdumpPath(ctx)
	if err != nil {
		return nil, err
	}
	// Exit status 1 means decode errors, which the output names.
	out, runErr := exec.CommandContext(ctx, bin, "-json", pcap).Output()
	var ee *exec.ExitError
	if runErr != nil && (!errors.As(runErr, &ee) || ee.ExitCode() != 1) {
		return nil, fmt.Errorf("interop: iwdump -json %s: %w", pcap, runErr)
	}
	d := &Decoded{Opcodes: map[rdmap.Opcode]int{}}
	var decodeErrs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var e iwdumpEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("interop: iwdump line %q: %w", line, err)
		}
		switch e.Kind {
		case "request", "reply":
			if e.Kind == "request" {
				d.Requests++
			} else {
				d.Replies++
			}
			d.Revs = append(d.Revs, e.Rev)
			d.CRCFlags = append(d.CRCFlags, e.C)
			d.MarkerFlags = append(d.MarkerFlags, e.M)
			d.RejectFlags = append(d.RejectFlags, e.R)
		case "fpdu":
			d.FPDUs++
			switch e.CRC {
			case "ok":
				d.Checked++
			case "bad":
				d.Checked++
				d.CRCBad++
			default:
				d.Unchecked++
				if v, _ := strconv.ParseUint(strings.TrimPrefix(e.CRCField, "0x"), 16, 32); v == 0 {
					d.CRCZero++
				}
			}
			if e.Opcode != nil {
				d.count(rdmap.Opcode(*e.Opcode))
			}
		case "error":
			decodeErrs = append(decodeErrs, e.Error)
		}
	}
	if len(decodeErrs) > 0 || runErr != nil {
		return d, fmt.Errorf("interop: iwdump %s: decode errors: %s", pcap, strings.Join(decodeErrs, "; "))
	}
	return d, nil
}

// moduleRoot is the repository root (two levels above this file).
func moduleRoot() (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("interop: cannot locate the source tree")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(self), "..", "..")), nil
}
