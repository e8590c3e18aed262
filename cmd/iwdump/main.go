// Command iwdump decodes iWARP traffic for people debugging iWARP links:
// MPA startup frames and FPDUs (RFC 5044, draft-01 Rev 0, RFC 6581 Rev 2)
// with their markers and CRCs, and the DDP (RFC 5041) and RDMAP (RFC 5040)
// headers they carry. It uses openiwarp's golden model to do so.
//
// Usage:
//
//	iwdump [-json] [-max-mem N] FILE|-
//	iwdump -stream [-no-startup] [-rev N] [-markers] [-crc=BOOL] [-json] FILE|-
//	iwdump -encode [-markers] [-crc=BOOL] < ULPDUS > STREAM
//
// Flags may come before or after FILE (iwdump capture.pcap -json); "--"
// ends the flags, for a file whose name starts with "-".
//
// The first form decodes every TCP connection of a pcap or pcapng file (- for
// stdin, so that tcpdump -w - can feed it). The
// Request/Reply pair of each connection gives the negotiated revision,
// markers (per direction) and CRC; connections that are not MPA are skipped
// with a note. Each FPDU is one line: frame number, connection, direction
// (I>R from the Initiator, R>I from the Responder), its stream offset from
// SeqStart, length on the wire, ULPDU length, markers, CRC status, and the
// DDP/RDMAP summary.
//
// -stream decodes one direction's raw byte stream (a file, or - for stdin)
// from its startup frame, or from SeqStart with -no-startup. -markers and
// -crc say what that direction uses (for a Rev 0 startup frame both default
// to on). -rev says which MPA revision the stream speaks: 0 (draft-01), 1
// or 2. Only Rev 0 decodes differently: its markers inside an FPDU that
// opens with a marker may point at that marker rather than at the
// ULPDU_Length field, and it turns -markers and -crc on unless they are
// given. With -no-startup, -rev is the only source of the revision
// (default 1). With a startup frame the frame's revision is used; a
// Request's direction may need -rev all the same, because the Reply in the
// other direction settles the revision (a Rev 1 or 2 Request answered by a
// draft-01 Reply speaks Rev 0, RFC 5044 App. C.2): -rev must then be one a
// Reply could have chosen, and for a Reply it may only repeat the Reply's.
// -rev does not apply to captures (their startup frames negotiate it) nor
// to -encode (which writes RFC 5044 markers). -encode reads ULPDUs as hex strings, one per line, and writes the
// FPDU stream a sender emits from SeqStart.
//
// With -json every line is a JSON object whose "kind" is "connection",
// "request", "reply", "negotiated", "fpdu", "note" or "error". A framing
// error stops the decoding of its direction, as RFC 5044 §8 requires of a
// receiver; a CRC mismatch is shown as an FPDU with "crc":"bad" first.
//
// Exit status: 0 when everything decoded, 1 when an error was reported
// (framing error, damaged capture, bad input), 2 for a usage error.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/internal/cli"
	"github.com/openiwarp/openiwarp/internal/pcapio"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command: tests call it in-process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stream := fs.Bool("stream", false, "decode one direction's raw MPA byte stream instead of a capture")
	noStartup := fs.Bool("no-startup", false, "with -stream: the stream starts at SeqStart, not with a Request or Reply")
	markers := fs.Bool("markers", false, "with -stream or -encode: the direction carries markers")
	crc := fs.Bool("crc", true, "with -stream or -encode: the direction carries CRC32c (RFC 5044's default)")
	enc := fs.Bool("encode", false, "read ULPDUs as hex lines on stdin, write the FPDU stream from SeqStart to stdout")
	jsonOut := fs.Bool("json", false, "print one JSON object per line")
	maxMem := fs.Int("max-mem", pcapio.DefaultMaxBuffered, "bound in octets on data held for reassembly and startup, per capture")
	rev := fs.Int("rev", 1, "with -stream -no-startup: the MPA revision the stream speaks, 0 (draft-01), 1 or 2; with a startup frame: the revision its Reply chose, when not the frame's own")
	chunk := fs.Int("chunk", 1<<16, "with -stream: read size in octets (decoding does not depend on it)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: iwdump [-json] [-max-mem N] FILE|-
       iwdump -stream [-no-startup] [-rev N] [-markers] [-crc=BOOL] [-json] FILE|-
       iwdump -encode [-markers] [-crc=BOOL] < ULPDUS > STREAM

Decodes iWARP MPA startup frames and FPDUs (markers, CRC32c) with their
DDP/RDMAP headers, from a pcap/pcapng capture or one direction's raw stream;
-encode frames ULPDUs given as hex lines. Flags may follow FILE. Exit
status 1 on decode errors.

`)
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "iwdump: "+format+"\n", a...)
		fmt.Fprintln(stderr, "run iwdump -h for usage")
		return 2
	}
	switch {
	case *stream && *enc:
		return usage("-stream and -encode exclude each other")
	case *noStartup && !*stream:
		return usage("-no-startup needs -stream")
	case (set["markers"] || set["crc"]) && !*stream && !*enc:
		return usage("-markers and -crc apply to -stream and -encode; a capture's are negotiated by its startup frames")
	case set["rev"] && !*stream:
		return usage("-rev needs -stream: a capture's revision is negotiated by its startup frames, and -encode writes RFC 5044 markers")
	case *rev < 0 || *rev > 2:
		return usage("-rev must be 0, 1 or 2, got %d", *rev)
	case set["chunk"] && !*stream:
		return usage("-chunk needs -stream")
	case *chunk < 1:
		return usage("-chunk must be at least 1")
	case *maxMem < 1:
		return usage("-max-mem must be at least 1")
	case *enc && *jsonOut:
		return usage("-encode writes the binary FPDU stream; -json does not apply")
	case *enc && fs.NArg() != 0:
		return usage("-encode reads stdin and takes no file argument")
	case !*enc && fs.NArg() != 1:
		return usage("expected exactly one input (a file, or - for stdin), got %d", fs.NArg())
	}

	out := bufio.NewWriterSize(stdout, 1<<16)
	defer out.Flush()
	if *enc {
		if err := encode(stdin, out, *markers, *crc); err != nil {
			out.Flush()
			fmt.Fprintln(stderr, "iwdump: -encode:", err)
			return 1
		}
		return 0
	}

	name := fs.Arg(0)
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(stderr, "iwdump:", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	p := &printer{w: out, json: *jsonOut}
	if *stream {
		decodeStream(p, in, streamOptions{startup: !*noStartup, markers: *markers, crc: *crc,
			markersSet: set["markers"], crcSet: set["crc"], rev: mpa.Revision(*rev), revSet: set["rev"], chunk: *chunk})
	} else {
		decodeCapture(p, in, name, *maxMem)
	}
	if p.errors > 0 {
		out.Flush()
		fmt.Fprintf(stderr, "iwdump: %s: %d decode error(s)\n", name, p.errors)
		return 1
	}
	return 0
}
