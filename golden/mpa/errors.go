package mpa

import (
	"errors"
	"fmt"
)

// ErrorCode is an MPA error code of RFC 5044 §8, the value a Terminate
// message carries in its Error Code field with Layer LLP. RFC 6581 adds
// codes 5 to 7 for the enhanced startup.
type ErrorCode uint8

// The error codes of RFC 5044 §8 and RFC 6581 §10.
const (
	CodeLLPClosed       ErrorCode = 1 // TCP connection closed, terminated or lost
	CodeCRC             ErrorCode = 2 // received MPA CRC does not match
	CodeMarker          ErrorCode = 3 // marker and ULPDU_Length disagree on the FPDU start
	CodeStartup         ErrorCode = 4 // invalid MPA Request or Reply frame
	CodeInsufficientIRD ErrorCode = 5 // RFC 6581: local IRD below the peer's ORD
	CodeNoMatchingRTR   ErrorCode = 6 // RFC 6581: no matching RTR model
	CodeUnexpectedRTR   ErrorCode = 7 // RFC 6581: RTR message not expected
)

var codeNames = [...]string{
	CodeLLPClosed:       "LLP connection closed",
	CodeCRC:             "MPA CRC error",
	CodeMarker:          "MPA marker/framing error",
	CodeStartup:         "invalid MPA Request or Reply",
	CodeInsufficientIRD: "insufficient IRD",
	CodeNoMatchingRTR:   "no matching RTR model",
	CodeUnexpectedRTR:   "unexpected RTR",
}

func (c ErrorCode) String() string {
	if int(c) < len(codeNames) && codeNames[c] != "" {
		return codeNames[c]
	}
	return fmt.Sprintf("MPA error code %d", uint8(c))
}

// Kind classifies an MPA error finer than its code: a length error and a
// marker error are both reported with code 3, for example.
type Kind uint8

// The kinds of MPA error.
const (
	KindCRC      Kind = iota + 1 // CRC mismatch (code 2)
	KindMarker                   // a marker's FPDUPTR disagrees with the framing (code 3)
	KindLength                   // ULPDU_Length outside 1..limit (code 3: framing lost)
	KindStartup                  // malformed or unacceptable Request/Reply (code 4)
	KindTimeout                  // startup exchange did not finish in time (code 4)
	KindClosed                   // the stream ended (code 1)
	KindRejected                 // the Responder set R=1 (TCP stays open)
)

var kindNames = [...]string{
	KindCRC:      "crc",
	KindMarker:   "marker",
	KindLength:   "length",
	KindStartup:  "startup",
	KindTimeout:  "timeout",
	KindClosed:   "closed",
	KindRejected: "rejected",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Sentinels for errors.Is; every *Error matches the one of its Kind.
var (
	ErrCRC      = errors.New("mpa: CRC error")
	ErrMarker   = errors.New("mpa: marker error")
	ErrLength   = errors.New("mpa: bad ULPDU_Length")
	ErrStartup  = errors.New("mpa: bad startup frame")
	ErrTimeout  = errors.New("mpa: startup timeout")
	ErrClosed   = errors.New("mpa: connection closed")
	ErrRejected = errors.New("mpa: connection rejected by peer")
)

var kindSentinels = [...]error{
	KindCRC:      ErrCRC,
	KindMarker:   ErrMarker,
	KindLength:   ErrLength,
	KindStartup:  ErrStartup,
	KindTimeout:  ErrTimeout,
	KindClosed:   ErrClosed,
	KindRejected: ErrRejected,
}

var kindCodes = [...]ErrorCode{
	KindCRC:      CodeCRC,
	KindMarker:   CodeMarker,
	KindLength:   CodeMarker,
	KindStartup:  CodeStartup,
	KindTimeout:  CodeStartup,
	KindClosed:   CodeLLPClosed,
	KindRejected: 0,
}

// Error is an MPA error. Framing errors (CRC, marker, length) carry the
// stream offset, counted from SeqStart, of the first octet of the FPDU that
// failed (its leading marker, if it has one).
type Error struct {
	Kind   Kind
	Code   ErrorCode // the RFC 5044 §8 code to report (0 for a rejection)
	Offset uint64    // stream offset of the offending FPDU from SeqStart
	Msg    string
	Err    error // underlying cause, if any
}

func newError(k Kind, off uint64, err error, format string, args ...any) *Error {
	return &Error{Kind: k, Code: kindCodes[k], Offset: off, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (e *Error) Error() string {
	s := "mpa: " + e.Kind.String() + " error"
	switch e.Kind {
	case KindCRC, KindMarker, KindLength:
		s += fmt.Sprintf(" at stream offset %d", e.Offset)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	return int(e.Kind) < len(kindSentinels) && kindSentinels[e.Kind] == target
}

// CloseTCP reports whether RFC 5044 requires the TCP connection to be closed
// at once. It is true for startup errors (code 4, §7.1.2 rules 2, 3, 5, 9;
// §8). For CRC and marker errors (codes 2 and 3) MPA MUST NOT close TCP: the
// receive half stops delivering and the transmit half stays usable so that a
// Terminate can still be sent (§8). A rejection leaves TCP open (§7.1.2 r3).
func (e *Error) CloseTCP() bool {
	return e.Kind == KindStartup || e.Kind == KindTimeout
}
