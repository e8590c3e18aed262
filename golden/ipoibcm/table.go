package ipoibcm

import (
	"fmt"
	"sort"
	"time"
)

// Policy selects how a [Table] treats crossing and repeated connections.
type Policy uint8

const (
	// PolicyStrict applies §3.3 exactly: one connection per peer pair,
	// used in both directions.
	PolicyStrict Policy = iota
	// PolicyCompat behaves like Linux IPoIB-CM: accept every request, send
	// on the connection we initiated, and fall back to the peer's connection
	// only when the peer rejected ours with Consumer Reject (a strict peer).
	PolicyCompat
)

func (p Policy) String() string {
	if p == PolicyCompat {
		return "compat"
	}
	return "strict"
}

// Role says which side set a connection up.
type Role uint8

const (
	RoleActive  Role = iota // we sent the request
	RolePassive             // we accepted the peer's request
)

func (r Role) String() string {
	if r == RolePassive {
		return "passive"
	}
	return "active"
}

// State is where a connection is in its life.
type State uint8

const (
	StateConnecting  State = iota // active: request outstanding; passive: accepted, not yet up
	StateEstablished              // messages may flow
)

func (s State) String() string {
	if s == StateEstablished {
		return "established"
	}
	return "connecting"
}

// ConnID names a connection in a [Table]. IDs are never reused.
type ConnID uint64

// ConnInfo is the record a node keeps of each connection (§3.2).
type ConnInfo struct {
	ID         ConnID
	Peer       LinkAddr // flags zeroed: the identity §3.3 compares
	Role       Role
	State      State
	MTU        int // IP MTU once negotiated (§5.1), else 0
	LastActive time.Time
}

// TableConfig configures a [Table].
type TableConfig struct {
	Local      LinkAddr // our own link-layer address
	ReceiveMTU uint32   // what we advertise: largest message incl. header we can receive
	Policy     Policy
	MaxConns   int // cap on connections of the interface (REQ floods); 0 means 128
}

// DefaultMaxConns is Linux's cap on non-SRQ connected QPs.
const DefaultMaxConns = 128

// Table is the record of the connections an interface takes part in (§3.2)
// and the decisions about them: which request to accept (§3.3), which
// connection to send on, the MTU of each (§5.1), and which to tear down
// (§3.4). It holds no sockets; the caller performs what it decides. It is not
// safe for concurrent use.
type Table struct {
	cfg   TableConfig
	conns map[ConnID]*ConnInfo
	next  ConnID
	// peerStrict records peers that rejected our request with Consumer
	// Reject: in compat mode we then send on their connection.
	peerStrict map[LinkAddr]bool
}

// NewTable validates cfg and returns an empty table.
func NewTable(cfg TableConfig) (*Table, error) {
	if cfg.ReceiveMTU < HeaderLen+MinMTUIPv4 {
		return nil, fmt.Errorf("connection table: Receive MTU %d below %d: %w", cfg.ReceiveMTU, HeaderLen+MinMTUIPv4, ErrMTU)
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	return &Table{cfg: cfg, conns: map[ConnID]*ConnInfo{}, peerStrict: map[LinkAddr]bool{}}, nil
}

// Local returns our link-layer address.
func (t *Table) Local() LinkAddr { return t.cfg.Local }

// PrivateData returns the block we put in every setup message and REJ
// (§3.2 requires our UD QPN in all of them, §5.1 the Receive MTU).
func (t *Table) PrivateData() PrivateData {
	return PrivateData{UDQPN: t.cfg.Local.QPN(), ReceiveMTU: t.cfg.ReceiveMTU}
}

func (t *Table) add(peer LinkAddr, role Role, now time.Time) *ConnInfo {
	t.next++
	c := &ConnInfo{ID: t.next, Peer: peer.WithoutFlags(), Role: role, LastActive: now}
	t.conns[c.ID] = c
	return c
}

func (t *Table) find(peer LinkAddr, match func(*ConnInfo) bool) *ConnInfo {
	peer = peer.WithoutFlags()
	var best *ConnInfo
	for _, c := range t.conns {
		if c.Peer == peer && match(c) && (best == nil || c.ID > best.ID) {
			best = c
		}
	}
	return best
}

// Connect records an outstanding request of ours to peer and returns its ID
// and the private data to send. The caller should first check [Table.SendConn]
// and [Table.Connecting]; a second outstanding request to the same peer is
// refused, as is one beyond the connection cap.
func (t *Table) Connect(peer LinkAddr, now time.Time) (ConnID, PrivateData, error) {
	if c := t.find(peer, func(c *ConnInfo) bool { return c.Role == RoleActive && c.State == StateConnecting }); c != nil {
		return 0, PrivateData{}, fmt.Errorf("connect to %v: request %d already outstanding: %w", peer, c.ID, ErrConnLimit)
	}
	if len(t.conns) >= t.cfg.MaxConns {
		return 0, PrivateData{}, fmt.Errorf("connect to %v: %d connections: %w", peer, len(t.conns), ErrConnLimit)
	}
	return t.add(peer, RoleActive, now).ID, t.PrivateData(), nil
}

// Connecting reports whether a connection to peer that we could send on is
// being set up: our own outstanding request, or in strict mode also the
// peer's request we accepted and that is not up yet. A caller with packets
// for peer starts a request only when this is false.
func (t *Table) Connecting(peer LinkAddr) bool {
	return t.find(peer, func(c *ConnInfo) bool {
		return c.State == StateConnecting && (c.Role == RoleActive || t.cfg.Policy == PolicyStrict)
	}) != nil
}

// Request decides on a request from peer, whose address the caller built as
// §4.3 says (flags 0, the UD QPN from pd, the requester's GID). On Accept the
// connection is recorded as passive and connecting, and superseded lists
// older connections with the same peer that the caller must tear down (the
// peer has evidently abandoned them). On any reject nothing is recorded; the
// caller sends a REJ carrying [Table.PrivateData]. err explains RejectInvalid
// and RejectLimit.
func (t *Table) Request(peer LinkAddr, pd PrivateData, now time.Time) (id ConnID, mtu int, d Decision, superseded []ConnID, err error) {
	peer = peer.WithoutFlags()
	if peer.QPN() != pd.UDQPN&MaxQPN {
		return 0, 0, RejectInvalid, nil, fmt.Errorf("request from %v: private data names UD QPN %#x: %w", peer, pd.UDQPN, ErrExtension)
	}
	mtu, err = ConnMTU(t.cfg.ReceiveMTU, pd.ReceiveMTU)
	if err != nil {
		return 0, 0, RejectInvalid, nil, fmt.Errorf("request from %v: %w", peer, err)
	}
	if t.cfg.Policy == PolicyStrict {
		// Our own request counts as outstanding until it is rejected; a
		// connection we set up that is already established counts too,
		// because its REP may overtake the peer's crossing REQ (they travel
		// on different TCP connections).
		ours := t.find(peer, func(c *ConnInfo) bool { return c.Role == RoleActive })
		if ResolveCrossing(t.cfg.Local, peer, ours != nil) == RejectCrossing {
			return 0, 0, RejectCrossing, nil, nil
		}
	}
	for _, c := range t.conns {
		if c.Peer == peer && (c.Role == RolePassive || (t.cfg.Policy == PolicyStrict && c.State == StateEstablished)) {
			superseded = append(superseded, c.ID)
		}
	}
	if len(t.conns)-len(superseded) >= t.cfg.MaxConns {
		return 0, 0, RejectLimit, nil, fmt.Errorf("request from %v: %d connections: %w", peer, len(t.conns), ErrConnLimit)
	}
	sort.Slice(superseded, func(i, j int) bool { return superseded[i] < superseded[j] })
	for _, s := range superseded {
		delete(t.conns, s)
	}
	c := t.add(peer, RolePassive, now)
	c.MTU = mtu
	return c.ID, mtu, Accept, superseded, nil
}

// Replied records the peer's acceptance of our request id and returns the
// connection's IP MTU. pd is the reply's private data; an MTU below the
// minimum removes the connection and is an ErrMTU error (the caller closes it).
func (t *Table) Replied(id ConnID, pd PrivateData, now time.Time) (int, error) {
	c, ok := t.conns[id]
	if !ok || c.Role != RoleActive || c.State != StateConnecting {
		return 0, fmt.Errorf("reply for connection %d: %w", id, ErrUnknownConn)
	}
	if c.Peer.QPN() != pd.UDQPN&MaxQPN {
		delete(t.conns, id)
		return 0, fmt.Errorf("reply on connection %d: UD QPN %#x, expected %#x: %w", id, pd.UDQPN, c.Peer.QPN(), ErrExtension)
	}
	mtu, err := ConnMTU(t.cfg.ReceiveMTU, pd.ReceiveMTU)
	if err != nil {
		delete(t.conns, id)
		return 0, fmt.Errorf("reply on connection %d: %w", id, err)
	}
	c.MTU, c.State, c.LastActive = mtu, StateEstablished, now
	return mtu, nil
}

// Rejected records that the peer rejected our request id and removes it.
// consumer is true for the §3.3 Consumer Reject: the peer keeps its own
// crossing connection, which we will then send on.
func (t *Table) Rejected(id ConnID, consumer bool) error {
	c, ok := t.conns[id]
	if !ok || c.Role != RoleActive || c.State != StateConnecting {
		return fmt.Errorf("reject for connection %d: %w", id, ErrUnknownConn)
	}
	if consumer {
		t.peerStrict[c.Peer] = true
	}
	delete(t.conns, id)
	return nil
}

// Up marks an accepted (passive) connection established: on iWARP once the
// MPA Reply is sent, standing in for the RTU.
func (t *Table) Up(id ConnID, now time.Time) error {
	c, ok := t.conns[id]
	if !ok || c.Role != RolePassive {
		return fmt.Errorf("up for connection %d: %w", id, ErrUnknownConn)
	}
	c.State, c.LastActive = StateEstablished, now
	return nil
}

// SendConn returns the established connection to send to peer on, if any.
// Strict: the newest established connection with the peer, whoever set it
// up. Compat: our own; the peer's only if it rejected ours as §3.3 says.
func (t *Table) SendConn(peer LinkAddr) (ConnInfo, bool) {
	usable := func(c *ConnInfo) bool {
		if c.State != StateEstablished {
			return false
		}
		return t.cfg.Policy == PolicyStrict || c.Role == RoleActive || t.peerStrict[c.Peer]
	}
	// Prefer our own connection in compat mode.
	if t.cfg.Policy == PolicyCompat {
		if c := t.find(peer, func(c *ConnInfo) bool { return usable(c) && c.Role == RoleActive }); c != nil {
			return *c, true
		}
	}
	if c := t.find(peer, usable); c != nil {
		return *c, true
	}
	return ConnInfo{}, false
}

// Touch records traffic on id (for the idle timer).
func (t *Table) Touch(id ConnID, now time.Time) {
	if c, ok := t.conns[id]; ok {
		c.LastActive = now
	}
}

// Conn returns the record of id.
func (t *Table) Conn(id ConnID) (ConnInfo, bool) {
	c, ok := t.conns[id]
	if !ok {
		return ConnInfo{}, false
	}
	return *c, true
}

// Close removes id (torn down by either side) and reports whether it was there.
func (t *Table) Close(id ConnID) bool {
	_, ok := t.conns[id]
	delete(t.conns, id)
	return ok
}

// Forget drops what the table learnt about peer beyond its connections (its
// strictness), as when its address-resolution entry expires (§3.4). It
// returns the peer's connections, which the caller may tear down.
func (t *Table) Forget(peer LinkAddr) []ConnID {
	peer = peer.WithoutFlags()
	delete(t.peerStrict, peer)
	var ids []ConnID
	for _, c := range t.conns {
		if c.Peer == peer {
			ids = append(ids, c.ID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Idle returns, in ID order, the established connections with no traffic
// since now-timeout: candidates for teardown (§3.4 allows idle policies).
func (t *Table) Idle(now time.Time, timeout time.Duration) []ConnID {
	var ids []ConnID
	for _, c := range t.conns {
		if c.State == StateEstablished && now.Sub(c.LastActive) >= timeout {
			ids = append(ids, c.ID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// All returns every record, in ID order.
func (t *Table) All() []ConnInfo {
	out := make([]ConnInfo, 0, len(t.conns))
	for _, c := range t.conns {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// CloseAll empties the table, as when the interface is removed (§3.4: its
// connections SHOULD be torn down), and returns the IDs to tear down.
func (t *Table) CloseAll() []ConnID {
	var ids []ConnID
	for _, c := range t.All() {
		ids = append(ids, c.ID)
	}
	clear(t.conns)
	clear(t.peerStrict)
	return ids
}
