package qp

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Sentinel errors (match with errors.Is).
var (
	// ErrClosed: the endpoint was closed by Close or by the peer's graceful close.
	ErrClosed = errors.New("iwarp: endpoint closed")
	// ErrConnLost: the TCP connection failed without a Terminate.
	ErrConnLost = errors.New("iwarp: connection lost")
	// ErrTerminated is matched by every *Error: the stream ended abortively.
	ErrTerminated = errors.New("iwarp: stream terminated")
	// ErrQueueFull: a post found its queue full.
	ErrQueueFull = errors.New("iwarp: work queue full")
	// ErrInvalidWR: a work request is malformed.
	ErrInvalidWR = errors.New("iwarp: invalid work request")
)

// Error is why a stream ended abortively: the cause of the Terminate this
// side sent (Remote false) or received (Remote true).
type Error struct {
	Cause     rdmap.Cause
	Remote    bool
	Terminate *rdmap.Terminate // the Terminate sent or received, if any
	Msg       string           // what was wrong
	Err       error            // underlying cause (an *mpa.Error, an I/O error)
}

func (e *Error) Error() string {
	who := "local"
	if e.Remote {
		who = "peer"
	}
	s := fmt.Sprintf("iwarp: %s error %v", who, e.Cause)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrTerminated) true.
func (e *Error) Is(target error) bool { return target == ErrTerminated }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// remoteStatus is the completion status for the WR a peer's Terminate hit.
func remoteStatus(c rdmap.Cause) Status {
	switch c.Type() {
	case rdmap.TypeRDMAPRemoteProtection, rdmap.TypeDDPTaggedBuffer:
		return WCRemAccessErr
	case rdmap.TypeRDMAPRemoteOperation, rdmap.TypeDDPUntaggedBuffer:
		return WCRemOpErr
	}
	return WCFatalErr
}
