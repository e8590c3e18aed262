package ipoibcm

import "errors"

// Decision is a responder's answer to a connection request.
type Decision uint8

const (
	// Accept: reply with our private data and set the connection up.
	Accept Decision = iota
	// RejectCrossing: §3.3 says the peer's crossing request loses. The REJ
	// reason is Consumer Reject and it carries our private data.
	RejectCrossing
	// RejectLimit: a per-interface cap on connections was reached.
	RejectLimit
	// RejectInvalid: the request's private data cannot set up a connection
	// (too short, an MTU below the IPv4 minimum, a Service-ID not ours).
	RejectInvalid
)

// IB CM REJ reasons carried in a reject's [Extension]. Consumer Reject (28)
// is what §3.3 prescribes and is confirmed (Linux IB_CM_REJ_CONSUMER_DEFINED,
// a libfabric report); the others follow Linux's enum ib_cm_rej_reason and
// IBA vol. 1 table 112 from memory: verify against the IBA text.
const (
	RejectReasonNoResources      = 3
	RejectReasonUnsupported      = 5
	RejectReasonInvalidServiceID = 8
	RejectReasonInvalidMTU       = 26
	RejectReasonConsumer         = 28
)

// RejectReason returns the REJ reason for a decision (0 for Accept). For
// RejectInvalid it picks from err: an MTU or Service-ID problem has its own
// reason; anything else is Unsupported.
func RejectReason(d Decision, err error) uint8 {
	switch d {
	case RejectCrossing:
		return RejectReasonConsumer
	case RejectLimit:
		return RejectReasonNoResources
	case RejectInvalid:
		switch {
		case errors.Is(err, ErrMTU):
			return RejectReasonInvalidMTU
		case errors.Is(err, ErrServiceID):
			return RejectReasonInvalidServiceID
		}
		return RejectReasonUnsupported
	}
	return 0
}

func (d Decision) String() string {
	switch d {
	case Accept:
		return "accept"
	case RejectCrossing:
		return "reject (crossing, consumer reject)"
	case RejectLimit:
		return "reject (connection limit)"
	case RejectInvalid:
		return "reject (invalid request)"
	}
	return "Decision(?)"
}

// ResolveCrossing applies RFC 4755 §3.3 to a request from remote (built as
// flags 0 : UD QPN from the private data : the requester's GID). With no
// outstanding request of our own to remote, local policy applies: accept.
// Otherwise the two addresses are compared with their flags zeroed; the
// request is accepted if local is numerically lower and rejected otherwise,
// so that exactly the request sent by the higher address survives.
func ResolveCrossing(local, remote LinkAddr, haveOutstanding bool) Decision {
	if !haveOutstanding || local.Compare(remote) < 0 {
		return Accept
	}
	return RejectCrossing
}
