package main

import (
	"bytes"
	"encoding/hex"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// maxStartupPD is the largest PD_Length iwdump accepts: draft-01 (Rev 0)
// peers may send up to 65535 octets, so a dump tool takes them all.
const maxStartupPD = 0xffff

// startupKind says what the first 16 octets of a direction are: "request",
// "reply", or "" if they are not an MPA key.
func startupKind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, mpa.KeyRequest[:]):
		return "request"
	case bytes.HasPrefix(b, mpa.KeyReply[:]):
		return "reply"
	}
	return ""
}

// frameEvent describes a parsed startup frame, RFC 6581 prefix included.
func newFrameEvent(f *mpa.Frame, w where) *frameEvent {
	kind := "request"
	if f.Reply {
		kind = "reply"
	}
	e := &frameEvent{Kind: kind, where: w, Rev: int(f.Rev), M: f.Markers, C: f.CRC, R: f.Reject,
		Enhanced: f.Enhanced, Res: f.Reserved, PDLength: len(f.PrivateData),
		PrivateData: hex.EncodeToString(f.PrivateData), ULPData: hex.EncodeToString(f.PrivateData)}
	if f.Enhanced {
		pd, err := mpa.ParseEnhancedPD(f.PrivateData)
		if err != nil {
			e.Note = "Enhanced flag set but no RFC 6581 prefix: " + err.Error()
			return e
		}
		e.IRD, e.ORD, e.P2P = ptr(pd.IRD), ptr(pd.ORD), ptr(pd.PeerToPeer)
		for _, r := range []struct {
			set  bool
			name string
		}{{pd.RTRSend, "send"}, {pd.RTRWrite, "write"}, {pd.RTRRead, "read"}} {
			if r.set {
				e.RTR = append(e.RTR, r.name)
			}
		}
		e.ULPData = hex.EncodeToString(f.PrivateData[mpa.EnhancedPDLen:])
	}
	return e
}

// negotiate works out what full operation uses from the Request and the
// Reply, as golden/mpa's Initiate and Respond do: the Reply's revision is
// spoken, a Rev 0 Reply means
// markers and CRC both ways (RFC 5044 App. C); otherwise each direction's
// markers are what its receiver's frame asked for and CRC is on if either
// frame set C (§7.1.1, §3.3 of the digest).
func negotiate(req, rep *mpa.Frame) (rev mpa.Revision, markersI2R, markersR2I, crc bool) {
	if rep.Rev == mpa.Rev0 {
		return mpa.Rev0, true, true, true
	}
	return rep.Rev, rep.Markers, req.Markers, req.CRC || rep.CRC
}
