package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/internal/pcapio"
)

// captureDecoder decodes every TCP connection of a capture as MPA.
type captureDecoder struct {
	p          *printer
	conns      map[*pcapio.Conn]*connState
	maxPending int
	skipped    map[string]int // packets not decoded, by reason
	skipOrder  []string
}

type connPhase int

const (
	phaseStartup connPhase = iota // waiting for the Request and the Reply
	phaseFull                     // both frames seen: FPDUs
	phaseSkip                     // not MPA, rejected or broken: ignore the rest
)

type connState struct {
	c         *pcapio.Conn
	phase     connPhase
	initiator int // Streams index of the Initiator's direction; -1 until known
	frames    [2]*mpa.Frame
	pending   [2]pendingBytes
	halves    [2]*half
	ended     int
	octets    uint64
}

// pendingBytes holds a direction's octets until the startup exchange is
// known, remembering which frame brought each piece.
type pendingBytes struct {
	b     []byte
	marks []pendingMark
}

type pendingMark struct{ end, frame int }

func (q *pendingBytes) add(p []byte, frame int) {
	q.b = append(q.b, p...)
	q.marks = append(q.marks, pendingMark{len(q.b), frame})
}

// frameAt is the frame that brought octet i.
func (q *pendingBytes) frameAt(i int) int {
	for _, m := range q.marks {
		if m.end > i {
			return m.frame
		}
	}
	return 0
}

func (q *pendingBytes) consume(n int) {
	q.b = q.b[n:]
	k := 0
	for _, m := range q.marks {
		if m.end -= n; m.end > 0 {
			q.marks[k] = m
			k++
		}
	}
	q.marks = q.marks[:k]
}

// replay feeds the held octets, frame by frame, and forgets them.
func (q *pendingBytes) replay(h *half) {
	start := 0
	for _, m := range q.marks {
		h.feed(q.b[start:m.end], m.frame)
		start = m.end
	}
	*q = pendingBytes{}
}

func decodeCapture(p *printer, r io.Reader, name string, maxMem int) {
	rd, err := pcapio.NewReader(r)
	if err != nil {
		p.error(where{}, nil, 0, "%s: %v", name, err)
		return
	}
	d := &captureDecoder{p: p, conns: map[*pcapio.Conn]*connState{}, maxPending: maxMem, skipped: map[string]int{}}
	asm := pcapio.NewAssembler(pcapio.AssemblerConfig{
		MaxBuffered: maxMem,
		NewConn:     func(c *pcapio.Conn) { d.conns[c] = &connState{c: c, initiator: -1} },
		Data:        d.data,
		Gap:         d.gap,
		End:         d.end,
	})
	var stop error
	for {
		pk, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			stop = fmt.Errorf("%s: %w", name, err)
			break
		}
		seg, err := pcapio.DecodeTCP(pk.LinkType, pk.Data)
		if err != nil {
			if !errors.Is(err, pcapio.ErrNotTCP) {
				d.skipPacket(pk.Index, err)
			}
			continue
		}
		if err := asm.Add(&seg, pk.Index); err != nil {
			stop = fmt.Errorf("frame %d: %w", pk.Index, err)
			break
		}
	}
	asm.Flush()
	for _, reason := range d.skipOrder {
		if n := d.skipped[reason]; n > 1 {
			p.note(where{}, "%d packets in all not decoded: %s", n, reason)
		}
	}
	if len(asm.Conns()) == 0 && stop == nil {
		p.note(where{}, "%s: no TCP connection in the capture", name)
	}
	if stop != nil {
		p.error(where{}, nil, 0, "%v", stop)
	}
}

// skipPacket notes the first packet skipped for each reason.
func (d *captureDecoder) skipPacket(frame int, err error) {
	var de *pcapio.DecodeError
	reason := err.Error()
	if errors.As(err, &de) {
		reason = de.Layer + " " + de.Err.Error()
	}
	if d.skipped[reason]++; d.skipped[reason] == 1 {
		d.skipOrder = append(d.skipOrder, reason)
		d.p.note(where{Frame: frame}, "frame %d not decoded: %v", frame, err)
	}
}

// where locates events of direction dir of cs.
func (d *captureDecoder) where(cs *connState, dir, frame int) where {
	s := cs.c.Streams[dir]
	w := where{Conn: cs.c.ID, Frame: frame, Src: s.Src.String(), Dst: s.Dst.String()}
	switch {
	case cs.initiator < 0:
	case dir == cs.initiator:
		w.From = "initiator"
	default:
		w.From = "responder"
	}
	return w
}

func (d *captureDecoder) data(s *pcapio.Stream, p []byte, frame int) {
	cs := d.conns[s.Conn]
	cs.octets += uint64(len(p))
	switch cs.phase {
	case phaseSkip:
		return
	case phaseFull:
		cs.halves[s.Dir].feed(p, frame)
		return
	}
	q := &cs.pending[s.Dir]
	q.add(p, frame)
	if len(q.b) > d.maxPending {
		d.p.error(d.where(cs, s.Dir, frame), nil, 0, "%d octets arrived before the MPA startup exchange completed, more than the -max-mem bound of %d; connection not decoded", len(q.b), d.maxPending)
		d.skip(cs)
		return
	}
	if cs.frames[s.Dir] == nil && !d.parseFrame(cs, s.Dir) {
		return
	}
	if cs.frames[0] != nil && cs.frames[1] != nil {
		d.startFull(cs, frame)
	}
}

func (d *captureDecoder) skip(cs *connState) {
	cs.phase = phaseSkip
	cs.pending = [2]pendingBytes{}
}

// parseFrame looks for the startup frame at the start of direction dir. It
// returns false while more octets are needed or once the connection is
// skipped.
func (d *captureDecoder) parseFrame(cs *connState, dir int) bool {
	q := &cs.pending[dir]
	if len(q.b) < mpa.KeyLen {
		return false
	}
	kind := startupKind(q.b)
	s := cs.c.Streams[dir]
	if kind == "" {
		w := d.where(cs, dir, q.frameAt(0))
		if cs.initiator < 0 {
			d.p.note(w, "connection %d (%v <-> %v) is not MPA: %s starts with % x; skipped", cs.c.ID, cs.c.Client, cs.c.Server, s, q.b[:mpa.KeyLen])
		} else {
			d.p.error(w, nil, int(mpa.CodeStartup), "expected an MPA %s from %v, got % x", startupName(dir != cs.initiator), s.Src, q.b[:mpa.KeyLen])
		}
		d.skip(cs)
		return false
	}
	f, n, err := mpa.ParseFrame(q.b, maxStartupPD)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return false
	}
	if cs.initiator < 0 {
		cs.initiator = dir
		if kind == "reply" {
			cs.initiator = 1 - dir
		}
		init, resp := cs.c.Streams[cs.initiator].Src, cs.c.Streams[1-cs.initiator].Src
		d.p.emit(&connEvent{Kind: "connection", Conn: cs.c.ID, Frame: q.frameAt(0), Client: cs.c.Client.String(),
			Server: cs.c.Server.String(), Initiator: init.String(), Responder: resp.String(), SYN: cs.c.SawSYN})
	}
	w := d.where(cs, dir, q.frameAt(max(n, mpa.FrameHeaderLen)-1))
	if err != nil {
		d.p.error(w, nil, int(mpa.CodeStartup), "%s", strings.TrimPrefix(err.Error(), "mpa: "))
		d.skip(cs)
		return false
	}
	if (kind == "request") != (dir == cs.initiator) {
		d.p.error(w, nil, int(mpa.CodeStartup), "both sides sent an MPA %s (RFC 5044 §7.1.2 rule 8)", startupName(kind == "reply"))
		d.skip(cs)
		return false
	}
	f.PrivateData = append([]byte(nil), f.PrivateData...)
	d.p.emit(newFrameEvent(&f, w))
	cs.frames[dir] = &f
	q.consume(n)
	return true
}

func startupName(reply bool) string {
	if reply {
		return "Reply"
	}
	return "Request"
}

// startFull negotiates from the two frames and decodes what has been held.
func (d *captureDecoder) startFull(cs *connState, frame int) {
	req, rep := cs.frames[cs.initiator], cs.frames[1-cs.initiator]
	rev, mI2R, mR2I, crc := negotiate(req, rep)
	ddpv := 1
	if rev == mpa.Rev0 {
		ddpv = 0
	}
	d.p.emit(&negotiatedEvent{Kind: "negotiated", Conn: cs.c.ID, Frame: frame, Rev: int(rev), DDPVersion: ddpv,
		CRC: crc, MarkersI2R: mI2R, MarkersR2I: mR2I, Rejected: rep.Reject})
	if rep.Reject {
		d.skip(cs)
		return
	}
	cs.phase = phaseFull
	for dir := range 2 {
		markers := mR2I
		if dir == cs.initiator {
			markers = mI2R
		}
		cs.halves[dir] = newHalf(d.p, d.where(cs, dir, frame), markers, crc, rev)
	}
	for dir := range 2 {
		cs.pending[dir].replay(cs.halves[dir])
	}
}

func (d *captureDecoder) gap(s *pcapio.Stream, n uint32, frame int) {
	cs := d.conns[s.Conn]
	w := d.where(cs, s.Dir, frame)
	switch cs.phase {
	case phaseFull:
		h := cs.halves[s.Dir]
		if h.failed {
			return
		}
		off := uint64(h.rawOff) + uint64(len(h.raw))
		d.p.error(w, &off, 0, "%d octets missing from the capture; this direction is not decoded further", n)
		h.failed = true
	case phaseStartup:
		d.p.error(w, nil, 0, "%d octets missing from the capture during the MPA startup; connection not decoded", n)
		d.skip(cs)
	}
}

func (d *captureDecoder) end(s *pcapio.Stream, reason string) {
	cs := d.conns[s.Conn]
	if cs.phase == phaseFull {
		cs.halves[s.Dir].end(true)
	}
	if cs.ended++; cs.ended < 2 || cs.phase != phaseStartup {
		return
	}
	// Both directions are over and the startup never completed.
	w := where{Conn: cs.c.ID}
	switch {
	case cs.initiator < 0 && cs.octets == 0:
		d.p.note(w, "connection %d (%v <-> %v) carries no data; skipped", cs.c.ID, cs.c.Client, cs.c.Server)
	case cs.initiator < 0:
		d.p.note(w, "connection %d (%v <-> %v) is not MPA: no 16-octet MPA key in its %d octets; skipped", cs.c.ID, cs.c.Client, cs.c.Server, cs.octets)
	default:
		missing := []string{}
		for dir := range 2 {
			if cs.frames[dir] == nil {
				missing = append(missing, startupName(dir != cs.initiator))
			}
		}
		sort.Strings(missing)
		d.p.error(w, nil, 0, "connection ended (%s) before the MPA %s was complete", reason, strings.Join(missing, " and "))
	}
}
