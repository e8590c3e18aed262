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
				h = newHalf(p, where{}, opts.markers, opts.crc, mpa.Rev1)
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
			rev := f.Rev
			if rev == mpa.Rev0 {
				// A draft-01 connection uses markers and CRC both ways
				// (RFC 5044 App. C) unless the flags say otherwise.
				if !opts.markersSet {
					opts.markers = true
				}
				if !opts.crcSet {
					opts.crc = true
				}
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
