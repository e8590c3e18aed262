package rnic

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// wqeOpcode maps a send WR's opcode (the same order as the card's).
var wqeOpcode = [...]cs.WQEOpcode{
	iwarp.WRSend: cs.WQEOpcodeSend, iwarp.WRSendInvalidate: cs.WQEOpcodeSendInv, iwarp.WRWrite: cs.WQEOpcodeRDMAWrite,
	iwarp.WRRead: cs.WQEOpcodeRDMARead, iwarp.WRLocalInvalidate: cs.WQEOpcodeLocalInv, iwarp.WRBindMW: cs.WQEOpcodeBindMW,
}

// sendBBs is the basic blocks a send WR takes.
func sendBBs(wr *iwarp.SendWR) int {
	n := cs.WQEHdr
	switch {
	case wr.Opcode == iwarp.WRBindMW:
		n += cs.BindSize
	case wr.Inline != nil:
		n += len(wr.Inline)
	default:
		n += cs.SGESize * len(wr.SGL)
	}
	return max(1, (n+cs.BB-1)/cs.BB)
}

// encodeSend writes wr as a WQE into b (its blocks, zeroed by the
// caller). bind is the window's new STag of a BIND_MW.
func encodeSend(b []byte, wr *iwarp.SendWR, bbs int, bind mem.STag) {
	h := cs.WQE(b)
	h.SetOpcode(wqeOpcode[wr.Opcode])
	h.SetSignaled(wr.Signaled)
	h.SetSolicited(wr.Solicited)
	h.SetFence(wr.Fence)
	h.SetBBS(uint8(bbs))
	h.SetWRID(wr.ID)
	h.SetRemoteAddr(wr.RemoteAddr)
	h.SetRKey(uint32(wr.RKey))
	h.SetInvSTag(uint32(wr.InvalidateSTag))
	p := b[cs.WQEHdr:]
	switch {
	case wr.Opcode == iwarp.WRBindMW:
		h.SetInvSTag(uint32(bind))
		r := cs.Bind(p)
		r.SetAddr(wr.Bind.Addr)
		r.SetLength(wr.Bind.Length)
		r.SetMRSTag(uint32(wr.Bind.MR.STag))
		r.SetAccess(uint8(wr.Bind.Access))
		r.SetType2(wr.Bind.MW.Type == mem.KindMW2)
	case wr.Inline != nil:
		h.SetInline(true)
		h.SetInlineLen(uint16(len(wr.Inline)))
		copy(p, wr.Inline)
	default:
		h.SetNSGE(uint8(len(wr.SGL)))
		encodeSGL(p, wr.SGL)
	}
}

// encodeRecv writes a receive WQE.
func encodeRecv(b []byte, wr *iwarp.RecvWR, bbs int) {
	h := cs.WQE(b)
	h.SetOpcode(cs.WQEOpcodeRecv)
	h.SetBBS(uint8(bbs))
	h.SetNSGE(uint8(len(wr.SGL)))
	h.SetWRID(wr.ID)
	encodeSGL(b[cs.WQEHdr:], wr.SGL)
}

func encodeSGL(b []byte, sgl []iwarp.SGE) {
	for i, s := range sgl {
		e := cs.SGE(b[i*cs.SGESize:])
		e.SetAddr(s.Addr)
		e.SetLength(s.Length)
		e.SetLKey(uint32(s.LKey))
	}
}

// recvBBs is the basic blocks a receive WR takes.
func recvBBs(wr *iwarp.RecvWR) int {
	return max(1, (cs.WQEHdr+cs.SGESize*len(wr.SGL)+cs.BB-1)/cs.BB)
}

// validSend checks a send WR as golden/iwarp does at post time, against
// the card's limits and the host mirror of its STag table.
func (q *qp) validSend(wr *iwarp.SendWR) error {
	k := q.c.caps
	switch {
	case wr.Opcode > iwarp.WRBindMW:
		return fmt.Errorf("%w: opcode %d", iwarp.ErrInvalidWR, wr.Opcode)
	case wr.Opcode == iwarp.WRBindMW && (wr.Bind == nil || wr.Bind.MW == nil || wr.Bind.MR == nil):
		return fmt.Errorf("%w: BIND_MW needs Bind with MW and MR", iwarp.ErrInvalidWR)
	case wr.Opcode == iwarp.WRRead && (len(wr.SGL) != 1 || wr.Inline != nil):
		return fmt.Errorf("%w: an RDMA Read takes one SGE (one Read Response writes one tagged buffer)", iwarp.ErrInvalidWR)
	case wr.Inline != nil && len(wr.Inline) > k.MaxInline:
		return fmt.Errorf("%w: %d bytes inline (the card takes %d)", iwarp.ErrInvalidWR, len(wr.Inline), k.MaxInline)
	case wr.Inline == nil && len(wr.SGL) > k.MaxSGE:
		return fmt.Errorf("%w: %d SGEs (the card takes %d)", iwarp.ErrInvalidWR, len(wr.SGL), k.MaxSGE)
	case wr.Inline != nil && (wr.Opcode == iwarp.WRLocalInvalidate || wr.Opcode == iwarp.WRBindMW):
		return fmt.Errorf("%w: %v takes no payload", iwarp.ErrInvalidWR, wr.Opcode)
	}
	if wr.Inline != nil || wr.Opcode == iwarp.WRLocalInvalidate || wr.Opcode == iwarp.WRBindMW {
		return nil
	}
	use := mem.UseLocalRead
	if wr.Opcode == iwarp.WRRead {
		use = mem.UseReadResponse
	}
	var n uint64
	for _, s := range wr.SGL {
		n += uint64(s.Length)
		if f := q.c.tab.Verify(mem.Request{STag: s.LKey, PD: q.pd.ID, QP: q.qpn, TO: s.Addr, Len: uint64(s.Length), Use: use}); f != mem.OK && s.Length > 0 {
			return fmt.Errorf("%w: SGE %v at %#x+%d: %v", iwarp.ErrInvalidWR, s.LKey, s.Addr, s.Length, f)
		}
	}
	if n > 1<<32-1 {
		return fmt.Errorf("%w: message of %d bytes (RFC 5041 §5.2: less than 2^32)", iwarp.ErrInvalidWR, n)
	}
	return nil
}

// validRecv checks a receive WR.
func (q *qp) validRecv(wr *iwarp.RecvWR) error {
	if len(wr.SGL) > q.c.caps.MaxSGE {
		return fmt.Errorf("%w: %d receive SGEs (the card takes %d)", iwarp.ErrInvalidWR, len(wr.SGL), q.c.caps.MaxSGE)
	}
	for _, s := range wr.SGL {
		if f := q.c.tab.Verify(mem.Request{STag: s.LKey, PD: q.pd.ID, QP: q.qpn, TO: s.Addr, Len: uint64(s.Length), Use: mem.UseLocalWrite}); f != mem.OK && s.Length > 0 {
			return fmt.Errorf("%w: receive SGE %v at %#x+%d: %v", iwarp.ErrInvalidWR, s.LKey, s.Addr, s.Length, f)
		}
	}
	return nil
}
