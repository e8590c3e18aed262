package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// streamOptions say how to read one direction's raw byte stream.
type streamOptions struct {
	startup    bool // the stream opens with a Request or Reply
	markers    bool
	crc        bool
	markersSet bool // -markers given explicitly
	crcSet     bool // -crc given explicitly
	rev        mpa.Revision
	revSet     bool // -rev given explicitly
	chunk      int  // read size; tests vary it to prove chunking does not matter
}

// decodeStream decodes one direction of an MPA connection from r: its
// startup frame (unless opts.startup is false), then FPDUs from SeqStart.
func decodeStream(p *printer, r io.Reader, opts streamOptions) {
	buf := make([]byte, max(opts.chunk, 1))
	var pre []byte
	var h *half
	for {
		n, err := r.Read(buf)
		b := buf[:n]
		for len(b) > 0 {
			if h != nil {
				h.feed(b, 0)
				break
			}
			if !opts.startup {
				rev, _ := streamRev(p, nil, &opts)
				h = newHalf(p, where{}, opts.markers, opts.crc, rev)
				continue
			}
			pre = append(pre, b...)
			b = nil
			f, used, ok := streamStartup(p, pre)
			if !ok {
				return
			}
			if f == nil {
				continue
			}
			rev, ok := streamRev(p, f, &opts)
			if !ok {
				return
			}
			h = newHalf(p, where{}, opts.markers, opts.crc, rev)
			b, pre = pre[used:], nil
		}
		if h != nil && h.failed {
			return
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			p.error(where{}, nil, 0, "reading the stream: %v", err)
			return
		}
	}
	switch {
	case h != nil:
		h.end(false)
	case !opts.startup:
		p.note(where{}, "empty stream")
	case len(pre) == 0:
		p.error(where{}, nil, int(mpa.CodeStartup), "empty stream: no MPA startup frame (use -no-startup for a stream that starts at SeqStart)")
	default:
		p.error(where{}, nil, int(mpa.CodeStartup), "stream ends after %d octets, inside its MPA startup frame", len(pre))
	}
}

// streamRev settles the revision the stream's FPDUs follow, f being its
// startup frame (nil with -no-startup), and turns markers and CRC on for
// Rev 0 unless the flags say otherwise: a draft-01 connection uses both
// ways (RFC 5044 App. C). Without a startup frame the revision is -rev's
// (default 1). A Reply's revision is the connection's, so -rev may only
// repeat it. A Request's is only what the Initiator offered: the Reply, in
// the other direction, may settle on a lower one (Rev 1 for a Rev 2
// Request, or draft-01's Rev 0 for any, App. C.2), which -rev then says.
// It reports a -rev no Reply could have negotiated and returns ok false.
func streamRev(p *printer, f *mpa.Frame, opts *streamOptions) (rev mpa.Revision, ok bool) {
	switch {
	case f == nil && opts.revSet:
		rev = opts.rev
	case f == nil:
		rev = mpa.Rev1
	case !opts.revSet || opts.rev == f.Rev:
		rev = f.Rev
	case f.Reply:
		p.error(where{}, nil, 0, "-rev %d contradicts the stream's Reply, which settles revision %d", opts.rev, f.Rev)
		return 0, false
	case opts.rev == mpa.Rev0 || (f.Rev == mpa.Rev2 && opts.rev == mpa.Rev1):
		rev = opts.rev
		p.note(where{}, "FPDUs follow revision %d (-rev), which the Reply chose over the Request's %d", rev, f.Rev)
	default:
		p.error(where{}, nil, 0, "-rev %d: no Reply of revision %d can answer a revision %d Request (RFC 5044 §7.1.2, App. C.2)", opts.rev, opts.rev, f.Rev)
		return 0, false
	}
	if rev == mpa.Rev0 {
		if !opts.markersSet {
			opts.markers = true
		}
		if !opts.crcSet {
			opts.crc = true
		}
	}
	return rev, true
}

// streamStartup parses the startup frame at the start of b. It returns the
// frame and its length once complete, a nil frame while more is needed, and
// ok false (after printing the error) if b cannot start with one.
func streamStartup(p *printer, b []byte) (f *mpa.Frame, n int, ok bool) {
	if len(b) >= mpa.KeyLen && startupKind(b) == "" {
		p.error(where{}, nil, int(mpa.CodeStartup), "stream starts with % x, not an MPA Request or Reply key (use -no-startup for a stream that starts at SeqStart)", b[:mpa.KeyLen])
		return nil, 0, false
	}
	fr, n, err := mpa.ParseFrame(b, maxStartupPD)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, 0, true
	}
	if err != nil {
		p.error(where{}, nil, int(mpa.CodeStartup), "%s", strings.TrimPrefix(err.Error(), "mpa: "))
		return nil, 0, false
	}
	fr.PrivateData = append([]byte(nil), fr.PrivateData...)
	p.emit(newFrameEvent(&fr, where{}))
	return &fr, n, true
}

// encode reads ULPDUs as hex, one per line, and writes the FPDU stream a
// sender emits from SeqStart. Blank lines and lines starting with # are
// skipped; spaces inside a line are ignored.
func encode(in io.Reader, out *bufio.Writer, markers, crc bool) error {
	f := mpa.Framer{Markers: markers, CRC: crc}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<16), 4*mpa.MaxULPDULength+1024)
	var fpdu []byte
	for line := 1; sc.Scan(); line++ {
		text := strings.Join(strings.Fields(sc.Text()), "")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		ulpdu, err := hex.DecodeString(text)
		if err != nil {
			return fmt.Errorf("line %d: not a hex string: %v", line, err)
		}
		if fpdu, err = f.AppendFPDU(fpdu[:0], ulpdu); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if _, err := out.Write(fpdu); err != nil {
			return fmt.Errorf("writing FPDU: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading ULPDUs: %w", err)
	}
	return nil
}
