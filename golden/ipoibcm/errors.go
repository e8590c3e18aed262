package ipoibcm

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// them, with detail on what was wrong.
var (
	// ErrShort: the input is shorter than the format needs.
	ErrShort = errors.New("ipoibcm: input too short")
	// ErrQPNRange: a QPN or endpoint ID does not fit in 24 bits.
	ErrQPNRange = errors.New("ipoibcm: QPN out of 24-bit range")
	// ErrServiceID: a Service-ID is not one IPoIB uses (wrong prefix, Type or Reserved).
	ErrServiceID = errors.New("ipoibcm: not an IPoIB Service-ID")
	// ErrReserved: a reserved field is not zero where the caller asked for strictness.
	ErrReserved = errors.New("ipoibcm: reserved field not zero")
	// ErrEtherType: the encapsulated protocol is not one this link carries.
	ErrEtherType = errors.New("ipoibcm: unsupported EtherType")
	// ErrMTU: an MTU is below a protocol minimum or beyond what is allowed.
	ErrMTU = errors.New("ipoibcm: MTU out of range")
	// ErrExtension: the openiwarp private-data extension is absent or malformed.
	ErrExtension = errors.New("ipoibcm: bad private-data extension")
	// ErrCredits: a credit update or receive-queue depth breaks the flow-control contract.
	ErrCredits = errors.New("ipoibcm: flow-control violation")
	// ErrConnLimit: accepting one more connection would exceed a configured cap.
	ErrConnLimit = errors.New("ipoibcm: connection limit reached")
	// ErrUnknownConn: the connection ID is not in the table (or in the wrong state).
	ErrUnknownConn = errors.New("ipoibcm: unknown connection")
)
