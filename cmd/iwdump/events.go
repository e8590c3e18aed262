package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Every line iwdump prints is one event. With -json each is one JSON object
// whose "kind" says which of the types below it is; without, each has a
// one-line human form in the spirit of tshark's summary lines.

// where locates an event: the connection and direction it belongs to and
// the capture frame that completed it. All zero in -stream mode.
type where struct {
	Conn  int    `json:"conn,omitempty"`
	Frame int    `json:"frame,omitempty"`
	From  string `json:"from,omitempty"` // "initiator" or "responder"
	Src   string `json:"src,omitempty"`
	Dst   string `json:"dst,omitempty"`
}

// prefix is the human form of where: frame, connection and arrow.
func (w *where) prefix() string {
	if w.Conn == 0 {
		return ""
	}
	dir := "   "
	switch w.From {
	case "initiator":
		dir = "I>R"
	case "responder":
		dir = "R>I"
	}
	return fmt.Sprintf("%6d  c%d %s  ", w.Frame, w.Conn, dir)
}

type connEvent struct {
	Kind      string `json:"kind"` // "connection"
	Conn      int    `json:"conn"`
	Frame     int    `json:"frame"`
	Client    string `json:"client"` // sent the TCP SYN (or the first packet)
	Server    string `json:"server"`
	Initiator string `json:"initiator"` // sent the MPA Request
	Responder string `json:"responder"`
	SYN       bool   `json:"syn"` // the TCP handshake is in the capture
}

func (e *connEvent) human() string {
	syn := ""
	if !e.SYN {
		syn = " (no SYN in capture)"
	}
	return fmt.Sprintf("%6d  c%d      connection %s -> %s: initiator %s, responder %s%s",
		e.Frame, e.Conn, e.Client, e.Server, e.Initiator, e.Responder, syn)
}

type frameEvent struct {
	Kind string `json:"kind"` // "request" or "reply"
	where
	Rev         int    `json:"rev"`
	M           bool   `json:"m"`
	C           bool   `json:"c"`
	R           bool   `json:"r"`
	Enhanced    bool   `json:"enhanced"` // RFC 6581 flag (0x10)
	Res         uint8  `json:"res"`      // the other reserved bits as received
	PDLength    int    `json:"pd_length"`
	PrivateData string `json:"private_data"` // hex, RFC 6581 prefix included
	// RFC 6581 prefix, when Enhanced.
	IRD *uint16  `json:"ird,omitempty"`
	ORD *uint16  `json:"ord,omitempty"`
	P2P *bool    `json:"p2p,omitempty"`
	RTR []string `json:"rtr,omitempty"` // "send", "write", "read"
	// ULPData is the private data after any RFC 6581 prefix, hex.
	ULPData string `json:"ulp_data"`
	Note    string `json:"note,omitempty"`
}

func (e *frameEvent) human() string {
	b := &strings.Builder{}
	kind := "Request"
	if e.Kind == "reply" {
		kind = "Reply"
	}
	fmt.Fprintf(b, "%sMPA %-7s Rev %d M=%d C=%d R=%d", e.prefix(), kind, e.Rev, bit(e.M), bit(e.C), bit(e.R))
	if e.Res != 0 {
		fmt.Fprintf(b, " Res=%#02x", e.Res)
	}
	if e.IRD != nil {
		fmt.Fprintf(b, " IRD=%d ORD=%d P2P=%d", *e.IRD, *e.ORD, bit(*e.P2P))
		if len(e.RTR) > 0 {
			fmt.Fprintf(b, " RTR=%s", strings.Join(e.RTR, ","))
		}
	}
	fmt.Fprintf(b, " PD_Length=%d", e.PDLength)
	if e.ULPData != "" {
		raw, _ := hex.DecodeString(e.ULPData)
		fmt.Fprintf(b, " data %s", quoteData(raw))
	}
	if e.Note != "" {
		b.WriteString(" [" + e.Note + "]")
	}
	return b.String()
}

type negotiatedEvent struct {
	Kind       string `json:"kind"` // "negotiated"
	Conn       int    `json:"conn"`
	Frame      int    `json:"frame"`
	Rev        int    `json:"rev"`
	DDPVersion int    `json:"ddp_version"`
	CRC        bool   `json:"crc_enabled"`
	MarkersI2R bool   `json:"markers_i2r"` // markers in the Initiator's FPDUs (Reply.M)
	MarkersR2I bool   `json:"markers_r2i"` // markers in the Responder's FPDUs (Request.M)
	Rejected   bool   `json:"rejected"`
}

func (e *negotiatedEvent) human() string {
	if e.Rejected {
		return fmt.Sprintf("%6d  c%d      negotiated: rejected by the Responder (R=1); the connection is not decoded further", e.Frame, e.Conn)
	}
	return fmt.Sprintf("%6d  c%d      negotiated: Rev %d (DDP/RDMAP v%d), CRC %s, markers I>R %s, R>I %s",
		e.Frame, e.Conn, e.Rev, e.DDPVersion, onOff(e.CRC), onOff(e.MarkersI2R), onOff(e.MarkersR2I))
}

type fpduEvent struct {
	Kind string `json:"kind"` // "fpdu"
	where
	Offset      uint32 `json:"offset"`   // stream offset from SeqStart of the first octet (leading marker included)
	WireLen     int    `json:"wire_len"` // octets on the wire: markers, length, ULPDU, PAD, CRC
	ULPDULength int    `json:"ulpdu_length"`
	Markers     int    `json:"markers"`
	CRC         string `json:"crc"` // "ok", "bad" or "off"
	CRCField    string `json:"crc_field"`
	CRCExpected string `json:"crc_expected,omitempty"` // with "bad": what it should have been
	ULPDU       string `json:"ulpdu"`                  // hex, markers removed

	// DDP (RFC 5041).
	DDPError   string  `json:"ddp_error,omitempty"`
	Tagged     *bool   `json:"tagged,omitempty"`
	Last       *bool   `json:"last,omitempty"`
	DDPVersion *uint8  `json:"ddp_version,omitempty"`
	STag       *uint32 `json:"stag,omitempty"`
	TO         *uint64 `json:"to,omitempty"`
	QN         *uint32 `json:"qn,omitempty"`
	MSN        *uint32 `json:"msn,omitempty"`
	MO         *uint32 `json:"mo,omitempty"`
	PayloadLen *int    `json:"payload_len,omitempty"`

	// RDMAP (RFC 5040).
	RDMAPError   string  `json:"rdmap_error,omitempty"`
	RDMAPVersion *uint8  `json:"rdmap_version,omitempty"`
	Opcode       *uint8  `json:"opcode,omitempty"`
	OpcodeName   string  `json:"opcode_name,omitempty"`
	InvalSTag    *uint32 `json:"inval_stag,omitempty"`
	// Read Request.
	SinkSTag *uint32 `json:"sink_stag,omitempty"`
	SinkTO   *uint64 `json:"sink_to,omitempty"`
	ReadSize *uint32 `json:"read_size,omitempty"`
	SrcSTag  *uint32 `json:"src_stag,omitempty"`
	SrcTO    *uint64 `json:"src_to,omitempty"`
	// Terminate.
	TermLayer     *uint8 `json:"term_layer,omitempty"`
	TermLayerName string `json:"term_layer_name,omitempty"`
	TermEType     *uint8 `json:"term_etype,omitempty"`
	TermTypeName  string `json:"term_type_name,omitempty"`
	TermCode      *uint8 `json:"term_code,omitempty"`
	TermCodeName  string `json:"term_code_name,omitempty"`
	TermHdrs      string `json:"term_hdrs,omitempty"` // M, D, R flags set
	TermLayout    string `json:"term_layout,omitempty"`
}

func (e *fpduEvent) human() string {
	b := &strings.Builder{}
	fmt.Fprintf(b, "%sFPDU off=%d len=%d ulpdu=%d mk=%d crc=%s", e.prefix(), e.Offset, e.WireLen, e.ULPDULength, e.Markers, e.CRC)
	if e.CRC == "bad" {
		fmt.Fprintf(b, " (field %s, computed %s)", e.CRCField, e.CRCExpected)
	}
	switch {
	case e.DDPError != "":
		fmt.Fprintf(b, " | DDP: %s", e.DDPError)
		return b.String()
	case *e.Tagged:
		fmt.Fprintf(b, " | DDP T%s v%d stag=%#x to=%#x", lastFlag(*e.Last), *e.DDPVersion, *e.STag, *e.TO)
	default:
		fmt.Fprintf(b, " | DDP U%s v%d qn=%d msn=%d mo=%d", lastFlag(*e.Last), *e.DDPVersion, *e.QN, *e.MSN, *e.MO)
	}
	fmt.Fprintf(b, " data=%d", *e.PayloadLen)
	if e.RDMAPError != "" {
		fmt.Fprintf(b, " | RDMAP: %s", e.RDMAPError)
		return b.String()
	}
	fmt.Fprintf(b, " | RDMAP v%d %s", *e.RDMAPVersion, e.OpcodeName)
	if e.InvalSTag != nil {
		fmt.Fprintf(b, " inval=%#x", *e.InvalSTag)
	}
	if e.SinkSTag != nil {
		fmt.Fprintf(b, " sink=%#x@%#x size=%d src=%#x@%#x", *e.SinkSTag, *e.SinkTO, *e.ReadSize, *e.SrcSTag, *e.SrcTO)
	}
	if e.TermLayer != nil {
		fmt.Fprintf(b, " %s: %s (%d/%d/%#02x)", e.TermTypeName, e.TermCodeName, *e.TermLayer, *e.TermEType, *e.TermCode)
		if e.TermHdrs != "" {
			fmt.Fprintf(b, " hdrs=%s", e.TermHdrs)
		}
		if e.TermLayout != "" && e.TermLayout != "RFC" {
			fmt.Fprintf(b, " layout=%s", e.TermLayout)
		}
	}
	return b.String()
}

type errorEvent struct {
	Kind string `json:"kind"` // "error"
	where
	Offset *uint64 `json:"offset,omitempty"` // stream offset from SeqStart, for framing errors
	Code   int     `json:"code,omitempty"`   // RFC 5044 §8 error code, for MPA errors
	Error  string  `json:"error"`
}

func (e *errorEvent) human() string {
	off := ""
	if e.Offset != nil {
		off = fmt.Sprintf(" at off=%d", *e.Offset)
	}
	code := ""
	if e.Code != 0 {
		code = fmt.Sprintf(" [MPA error code %d]", e.Code)
	}
	return fmt.Sprintf("%sERROR%s: %s%s", e.prefix(), off, e.Error, code)
}

type noteEvent struct {
	Kind string `json:"kind"` // "note"
	where
	Note string `json:"note"`
}

func (e *noteEvent) human() string { return e.prefix() + "note: " + e.Note }

// printer writes events as JSON lines or human lines and remembers whether
// any was an error (the exit status).
type printer struct {
	w      *bufio.Writer
	json   bool
	errors int
}

type event interface{ human() string }

func (p *printer) emit(e event) {
	if _, ok := e.(*errorEvent); ok {
		p.errors++
	}
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)              // keep "<->" and "->" readable
		if err := enc.Encode(e); err != nil { // every field is a plain value; kept for safety
			fmt.Fprintf(p.w, "{\"kind\":\"error\",\"error\":%q}\n", "encoding event: "+err.Error())
			p.errors++
		}
		return
	}
	p.w.WriteString(e.human())
	p.w.WriteByte('\n')
}

func (p *printer) note(w where, format string, a ...any) {
	p.emit(&noteEvent{Kind: "note", where: w, Note: fmt.Sprintf(format, a...)})
}

func (p *printer) error(w where, off *uint64, code int, format string, a ...any) {
	p.emit(&errorEvent{Kind: "error", where: w, Offset: off, Code: code, Error: fmt.Sprintf(format, a...)})
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func lastFlag(l bool) string {
	if l {
		return " L"
	}
	return ""
}

// quoteData shows private data as a quoted string when it is printable
// text, else as hex.
func quoteData(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			if len(b) > 32 {
				return hex.EncodeToString(b[:32]) + "..."
			}
			return hex.EncodeToString(b)
		}
	}
	return fmt.Sprintf("%q", b)
}
