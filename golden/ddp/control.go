package ddp

import "fmt"

// Control is the DDP control byte, the first octet of every DDP header
// (RFC 5041 §4.1):
//
//	bit 7   6   5..2   1..0
//	    T   L   Rsvd   DV
type Control uint8

// Control byte layout.
const (
	ControlTagged  Control = 0x80 // T: tagged buffer model
	ControlLast    Control = 0x40 // L: last segment of a message
	ControlRsvd    Control = 0x3C // reserved: zero on transmit, not checked on receive
	ControlVersion Control = 0x03 // DV: DDP version
)

// Version is the 2-bit DDP version (DV) field.
type Version uint8

// DDP versions.
const (
	// VersionRDMAC is the RDMA Consortium version, used with MPA revision 0.
	VersionRDMAC Version = 0
	// Version1 is RFC 5041, used with MPA revisions 1 and 2.
	Version1 Version = 1
)

// NewControl builds a control byte; the reserved bits are zero.
func NewControl(tagged, last bool, v Version) Control {
	c := Control(v) & ControlVersion
	if tagged {
		c |= ControlTagged
	}
	if last {
		c |= ControlLast
	}
	return c
}

// Tagged reports the T flag.
func (c Control) Tagged() bool { return c&ControlTagged != 0 }

// Last reports the L flag.
func (c Control) Last() bool { return c&ControlLast != 0 }

// Version returns the DV field.
func (c Control) Version() Version { return Version(c & ControlVersion) }

// HeaderLen is the length of the DDP header this control byte announces.
func (c Control) HeaderLen() int {
	if c.Tagged() {
		return TaggedHeaderLen
	}
	return UntaggedHeaderLen
}

func (c Control) String() string {
	t, l := "U", "-"
	if c.Tagged() {
		t = "T"
	}
	if c.Last() {
		l = "L"
	}
	return fmt.Sprintf("%s%s DV=%d", t, l, c.Version())
}
