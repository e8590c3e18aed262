package mpa

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// RTR names a ready-to-receive message of the RFC 6581 peer-to-peer model:
// the zero-length FPDU the Initiator sends first so that the Responder,
// which may not send before it has received an FPDU (RFC 5044 §7.1.2
// rule 4), can speak first in the ULP's protocol.
type RTR uint8

// RTR messages; as a set they combine with |.
const (
	RTRSend  RTR = 1 << iota // zero-length Send
	RTRWrite                 // zero-length RDMA Write
	RTRRead                  // zero-length RDMA Read Request
)

func (r RTR) String() string {
	switch r {
	case 0:
		return "none"
	case RTRSend:
		return "send"
	case RTRWrite:
		return "write"
	case RTRRead:
		return "read"
	}
	return fmt.Sprintf("rtr-set(%#x)", uint8(r))
}

// DefaultStartupTimeout bounds the whole startup exchange when Config.Timeout
// is zero (RFC 5044 §7.1.2 rule 10 asks for a timeout but gives no value):
// a few seconds, as Linux siw drops a half-sent Request after about 5 s, so
// that a peer that stalls in its startup holds a connection only briefly.
const DefaultStartupTimeout = 5 * time.Second

// Config is one side's part of the MPA startup exchange. The zero Config
// speaks RFC 5044 (Rev 1) with CRCs and without markers.
type Config struct {
	// Rev is the revision an Initiator sends (zero: Rev1) and the highest
	// a Responder answers with (zero: Rev2). A Responder answers every
	// Request with the Request's own revision when it can speak it, so
	// each peer gets the revision it can speak.
	Rev Revision
	// Draft01 makes this side a draft-ietf-rddp-mpa-01 implementation: it
	// sends Rev 0 and accepts nothing else (draft-01 §6.1.1).
	Draft01 bool
	// Markers sets M: this side wants markers in the FPDUs it receives.
	Markers bool
	// NoCRC sets C=0. CRCs are on by default (RFC 5044 §4.4); they are
	// off only if both sides send C=0.
	NoCRC bool
	// PrivateData is the ULP's private data. With Rev 2 the package puts
	// the RFC 6581 IRD/ORD prefix in front of it.
	PrivateData []byte
	// IRD and ORD are this side's RDMA Read limits, sent with Rev 2.
	IRD, ORD uint16
	// PeerToPeer asks (Initiator) or allows (Responder) the RFC 6581
	// peer-to-peer model with one of the RTR messages in RTR (zero: any).
	PeerToPeer bool
	RTR        RTR
	// Timeout bounds the whole exchange (zero: DefaultStartupTimeout).
	Timeout time.Duration
	// MaxPrivateData is the largest PD_Length accepted from the peer
	// (zero: 512, or 65535 with Draft01).
	MaxPrivateData int
	// Accept is the Responder's ULP hook: it sees the Request as the
	// negotiated Params and may reject it (Reply with R=1, RFC 5044
	// §7.1.2 rule 2) with private data saying why. Nil accepts.
	Accept func(p *Params) (reject bool, replyPD []byte)
}

// Params is the outcome of a startup exchange: what both half connections
// of full operation use.
type Params struct {
	Initiator bool
	Rev       Revision // the MPA revision spoken (see DDPVersion)
	TxMarkers bool     // markers in what this side sends (the peer's M)
	RxMarkers bool     // markers in what this side receives (its own M)
	CRC       bool     // CRCs generated and checked both ways (C in either frame)
	Local     Frame    // the frame this side sent
	Peer      Frame    // the frame the peer sent
	PeerPD    []byte   // the peer's ULP private data (after any RFC 6581 prefix)
	// Rev 2 only: the peer's limits and the peer-to-peer RTR message
	// agreed on (0 when the peer-to-peer model is not in use).
	PeerIRD, PeerORD uint16
	RTR              RTR
	// WaitFirstFPDU is set for the Responder: it MUST receive and validate
	// one FPDU before it sends any FPDU or marker (RFC 5044 §7.1.2 rule 4).
	WaitFirstFPDU bool
}

// DDPVersion is the DDP and RDMAP version that goes with the MPA revision:
// 0 for a draft-01 (RDMA Consortium) peer, 1 otherwise (RFC 5044 App. C).
func (p *Params) DDPVersion() uint8 {
	if p.Rev == Rev0 {
		return 0
	}
	return 1
}

// Framer returns the transmit framer of this side, at SeqStart.
func (p *Params) Framer() Framer { return Framer{Markers: p.TxMarkers, CRC: p.CRC} }

// Deframer returns the receive deframer of this side, at SeqStart.
func (p *Params) Deframer(maxULPDU int) *Deframer {
	return NewDeframer(DeframerConfig{Markers: p.RxMarkers, CRC: p.CRC, Rev: p.Rev, MaxULPDU: maxULPDU})
}

func (c *Config) maxPD() int {
	switch {
	case c.MaxPrivateData > 0:
		return min(c.MaxPrivateData, 0xffff)
	case c.Draft01:
		return 0xffff
	}
	return MaxPrivateData
}

// localFrame builds the frame this side sends at revision rev.
func (c *Config) localFrame(reply bool, rev Revision, pd []byte) (Frame, error) {
	f := Frame{Reply: reply, Rev: rev, Markers: c.Markers, CRC: !c.NoCRC, PrivateData: pd}
	if rev == Rev0 {
		// Talking to an RDMA Consortium peer: always M=1 and C=1, so that
		// either kind of Rev 0 peer behaves the same (digest §6.3 step 4).
		f.Markers, f.CRC = true, true
	}
	if rev == Rev2 {
		if c.IRD > MaxIRDORD || c.ORD > MaxIRDORD {
			return f, fmt.Errorf("mpa: IRD %d / ORD %d exceed the RFC 6581 limit of %d", c.IRD, c.ORD, MaxIRDORD)
		}
		f.Enhanced = true
	}
	return f, nil
}

// Initiate runs the Initiator's side of the startup exchange on conn
// (RFC 5044 §7.1.2 rules 1, 3, 5, 8, 9): it sends a Request, then reads and
// validates the Reply. It reads nothing beyond the Reply. On success the
// connection is in full operation and the caller owns conn.
//
// A malformed or unacceptable Reply, a timeout or a cancelled ctx close
// conn and return an *Error. A Reply with R=1 returns the Params so far and
// an error matching ErrRejected; conn is then left open (rule 3).
func Initiate(ctx context.Context, conn net.Conn, cfg Config) (Params, error) {
	p := Params{Initiator: true}
	rev := cfg.Rev
	switch {
	case cfg.Draft01:
		rev = Rev0
	case rev == Rev0:
		rev = Rev1
	case rev > Rev2:
		return p, fmt.Errorf("mpa: cannot initiate with revision %d", rev)
	}
	pd := cfg.PrivateData
	if rev == Rev2 {
		e := EnhancedPD{IRD: cfg.IRD, ORD: cfg.ORD, PeerToPeer: cfg.PeerToPeer}
		if cfg.PeerToPeer {
			rtr := cfg.RTR
			if rtr == 0 {
				rtr = RTRSend | RTRWrite | RTRRead
			}
			e.RTRSend, e.RTRWrite, e.RTRRead = rtr&RTRSend != 0, rtr&RTRWrite != 0, rtr&RTRRead != 0
		}
		pd = append(e.Append(nil), pd...)
	}
	var err error
	if p.Local, err = cfg.localFrame(false, rev, pd); err != nil {
		return p, err
	}
	buf, err := p.Local.Append(nil)
	if err != nil {
		return p, err
	}
	done := startupDeadline(ctx, conn, cfg.Timeout)
	defer done()
	if _, err := conn.Write(buf); err != nil {
		return p, failStartup(ctx, conn, newError(KindClosed, 0, err, "sending MPA Request"))
	}
	if p.Peer, err = ReadFrame(conn, cfg.maxPD()); err != nil {
		return p, failStartup(ctx, conn, err)
	}
	if err := p.acceptReply(&cfg); err != nil {
		return p, failStartup(ctx, conn, err)
	}
	if p.Peer.Reject {
		return p, newError(KindRejected, 0, nil, "Responder set R=1 with %d octets of private data", len(p.PeerPD))
	}
	return p, nil
}

// acceptReply validates the Reply against the Request sent and fills in
// the negotiated parameters.
func (p *Params) acceptReply(cfg *Config) error {
	req, rep := &p.Local, &p.Peer
	if !rep.Reply {
		return newError(KindStartup, 0, nil, "received an MPA Request while waiting for a Reply: both sides are Initiators (§7.1.2 rule 8)")
	}
	switch {
	case rep.Rev == req.Rev:
	case req.Rev == Rev0:
		return newError(KindStartup, 0, nil, "Reply has revision %v; a draft-01 Initiator accepts only 0", rep.Rev)
	case rep.Rev == Rev0:
		// A permissive RFC 5044 Initiator follows a Rev 0 Responder into
		// RDMA Consortium mode: markers and CRC both ways (App. C.2).
	case req.Rev == Rev2 && rep.Rev == Rev1:
		// The Responder does not speak RFC 6581; plain RFC 5044 it is.
	default:
		return newError(KindStartup, 0, nil, "Reply has revision %v to a revision %v Request", rep.Rev, req.Rev)
	}
	p.Rev = rep.Rev
	p.PeerPD = rep.PrivateData
	if p.Rev == Rev0 {
		p.TxMarkers, p.RxMarkers, p.CRC = true, true, true
	} else {
		p.TxMarkers, p.RxMarkers, p.CRC = rep.Markers, req.Markers, req.CRC || rep.CRC
	}
	if p.Rev == Rev2 && rep.Enhanced {
		e, err := ParseEnhancedPD(rep.PrivateData)
		if err != nil {
			return err
		}
		p.PeerIRD, p.PeerORD, p.PeerPD = e.IRD, e.ORD, rep.PrivateData[EnhancedPDLen:]
		if e.PeerToPeer && !rep.Reject {
			offered, _ := ParseEnhancedPD(req.PrivateData)
			chosen := rtrSet(e)
			if !offered.PeerToPeer || chosen&rtrSet(offered) != chosen || !singleRTR(chosen) {
				return &Error{Kind: KindStartup, Code: CodeNoMatchingRTR,
					Msg: fmt.Sprintf("Reply chose RTR %v, which the Request did not offer (%v)", chosen, rtrSet(offered))}
			}
			p.RTR = chosen
		}
	}
	return nil
}

// Respond runs the Responder's side of the startup exchange on conn
// (RFC 5044 §7.1.2 rules 2, 4, 5, 8, 9): it reads and validates a Request,
// lets cfg.Accept decide, and sends the Reply. It reads nothing beyond the
// Request. The returned Params has WaitFirstFPDU set: the caller must
// validate one FPDU from the Initiator before sending anything.
//
// A malformed Request, a timeout or a cancelled ctx close conn and return
// an *Error. A rejection sends a Reply with R=1 and returns an error
// matching ErrRejected, leaving conn open (rule 2).
func Respond(ctx context.Context, conn net.Conn, cfg Config) (Params, error) {
	p := Params{WaitFirstFPDU: true}
	done := startupDeadline(ctx, conn, cfg.Timeout)
	defer done()
	var err error
	if p.Peer, err = ReadFrame(conn, cfg.maxPD()); err != nil {
		return p, failStartup(ctx, conn, err)
	}
	replyPD, reject, err := p.acceptRequest(&cfg)
	if err != nil {
		return p, failStartup(ctx, conn, err)
	}
	if p.Local, err = cfg.localFrame(true, p.Rev, replyPD); err != nil {
		return p, failStartup(ctx, conn, err)
	}
	if p.Rev == Rev2 && !p.Peer.Enhanced {
		p.Local.Enhanced = false
	}
	p.Local.Reject = reject
	if p.Rev == Rev0 {
		p.Local.CRC = true
	} else {
		p.Local.CRC = p.Local.CRC || p.Peer.CRC // echo C so captures read easily
	}
	buf, err := p.Local.Append(nil)
	if err != nil {
		return p, failStartup(ctx, conn, err)
	}
	if _, err := conn.Write(buf); err != nil {
		return p, failStartup(ctx, conn, newError(KindClosed, 0, err, "sending MPA Reply"))
	}
	if reject {
		return p, newError(KindRejected, 0, nil, "local ULP rejected the Request")
	}
	if p.Rev == Rev0 {
		p.TxMarkers, p.RxMarkers, p.CRC = true, true, true
	} else {
		p.TxMarkers, p.RxMarkers, p.CRC = p.Peer.Markers, p.Local.Markers, p.Peer.CRC || p.Local.CRC
	}
	return p, nil
}

// acceptRequest validates the Request, settles the revision and asks the
// ULP. It returns the Reply's private data, prefix included.
func (p *Params) acceptRequest(cfg *Config) (replyPD []byte, reject bool, err error) {
	req := &p.Peer
	if req.Reply {
		return nil, false, newError(KindStartup, 0, nil, "received an MPA Reply while waiting for a Request: both sides are Responders")
	}
	maxRev := cfg.Rev
	if maxRev == Rev0 {
		maxRev = Rev2
	}
	switch {
	case cfg.Draft01 && req.Rev != Rev0:
		return nil, false, newError(KindStartup, 0, nil, "Request has revision %v; a draft-01 Responder accepts only 0", req.Rev)
	case req.Rev > Rev2:
		return nil, false, newError(KindStartup, 0, nil, "cannot interoperate with MPA revision %d", uint8(req.Rev))
	}
	p.Rev = min(req.Rev, maxRev)
	p.PeerPD = req.PrivateData
	var offered EnhancedPD
	if req.Rev == Rev2 && req.Enhanced {
		if offered, err = ParseEnhancedPD(req.PrivateData); err != nil {
			return nil, false, err
		}
		p.PeerIRD, p.PeerORD, p.PeerPD = offered.IRD, offered.ORD, req.PrivateData[EnhancedPDLen:]
	}
	var reply EnhancedPD
	if p.Rev == Rev2 && offered.PeerToPeer {
		allowed := cfg.RTR
		if allowed == 0 {
			allowed = RTRSend | RTRWrite | RTRRead
		}
		common := rtrSet(offered) & allowed
		if !cfg.PeerToPeer || common == 0 {
			return nil, false, &Error{Kind: KindStartup, Code: CodeNoMatchingRTR,
				Msg: fmt.Sprintf("Request asks for the peer-to-peer model with RTR %v; this side allows %v", rtrSet(offered), allowed)}
		}
		// Prefer the cheapest RTR for the Initiator: a Write needs no
		// receive buffer and no Read credit.
		for _, r := range []RTR{RTRWrite, RTRSend, RTRRead} {
			if common&r != 0 {
				p.RTR = r
				break
			}
		}
		reply = EnhancedPD{PeerToPeer: true, RTRSend: p.RTR == RTRSend, RTRWrite: p.RTR == RTRWrite, RTRRead: p.RTR == RTRRead}
	}
	ulpPD := cfg.PrivateData
	if cfg.Accept != nil {
		reject, ulpPD = cfg.Accept(p)
	}
	if p.Rev == Rev2 && req.Enhanced {
		reply.IRD, reply.ORD = cfg.IRD, min(cfg.ORD, p.PeerIRD)
		replyPD = append(reply.Append(nil), ulpPD...)
	} else {
		replyPD = ulpPD
	}
	return replyPD, reject, nil
}

func rtrSet(e EnhancedPD) RTR {
	var r RTR
	if e.RTRSend {
		r |= RTRSend
	}
	if e.RTRWrite {
		r |= RTRWrite
	}
	if e.RTRRead {
		r |= RTRRead
	}
	return r
}

func singleRTR(r RTR) bool { return r != 0 && r&(r-1) == 0 }

// startupDeadline bounds the exchange by cfg's timeout and ctx, and returns
// a function that lifts the bound again.
func startupDeadline(ctx context.Context, conn net.Conn, timeout time.Duration) func() {
	if timeout <= 0 {
		timeout = DefaultStartupTimeout
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		_ = conn.SetDeadline(time.Time{})
	}
}

// failStartup closes conn, as RFC 5044 requires for every startup failure
// (§7.1.2 rules 2, 3, 5, 9; §8 code 4), and returns err, reworded when the
// cause was ctx.
func failStartup(ctx context.Context, conn net.Conn, err error) error {
	_ = conn.Close()
	if ctxErr := ctx.Err(); ctxErr != nil {
		var me *Error
		msg := "startup cancelled"
		if errors.As(err, &me) {
			msg += " (" + me.Msg + ")"
		}
		return newError(KindTimeout, 0, ctxErr, "%s", msg)
	}
	return err
}
