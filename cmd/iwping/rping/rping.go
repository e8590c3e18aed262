// Package rping speaks the wire behaviour of rdma-core's rping
// (librdmacm/examples/rping.c) over any RDMA connection that offers Send,
// Receive, RDMA Read and RDMA Write: the same messages, in the same order,
// with the same buffer contents, so that either side interoperates with the
// real rping.
//
// One ping cycle, client and server:
//
//	client: Send  {start buffer addr, rkey, size}      (its "source" advertisement)
//	server: RDMA Read of size octets from that buffer into its own buffer
//	server: Send  (go-ahead, 16 zero octets)
//	client: Send  {sink buffer addr, rkey, size}       (its "sink" advertisement)
//	server: RDMA Write of strlen(buffer)+1 octets to the sink
//	server: Send  (go-ahead, 16 zero octets)
//	client: compares source and sink (rping -V) and prints the sink (-v)
//
// Every Send carries exactly Info's 16 octets (rping's struct rping_rdma_info:
// __be64 buf, __be32 rkey, __be32 size); a receive of any other length is
// "bogus data", as in rping. The client fills its source buffer with
// "rdma-ping-<n>: " and then ASCII 'A'..'z' starting one letter later on each
// cycle, NUL-terminated at size-1 (FillPing).
package rping

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// DefaultPort is rping's default TCP port.
const DefaultPort = 7174

// InfoLen is the size of every rping message (struct rping_rdma_info).
const InfoLen = 16

// DefaultSize is rping's default ping data size; MinSize and MaxSize bound
// -S as rping does (sizeof "2147483647" + sizeof "rdma-ping-%d: ", and
// RPING_BUFSIZE-1).
const (
	DefaultSize = 64
	MinSize     = 26
	MaxSize     = 64*1024 - 1
)

// Info is a buffer advertisement: where the peer may read or write.
type Info struct {
	Addr uint64
	RKey uint32
	Size uint32
}

// Append appends the 16-octet big-endian encoding of i.
func (i Info) Append(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, i.Addr)
	dst = binary.BigEndian.AppendUint32(dst, i.RKey)
	return binary.BigEndian.AppendUint32(dst, i.Size)
}

// ErrBogus is a received message whose length is not InfoLen.
var ErrBogus = errors.New("rping: received bogus data")

// ParseInfo decodes a received message.
func ParseInfo(b []byte) (Info, error) {
	if len(b) != InfoLen {
		return Info{}, fmt.Errorf("%w, size %d (want %d)", ErrBogus, len(b), InfoLen)
	}
	return Info{Addr: binary.BigEndian.Uint64(b), RKey: binary.BigEndian.Uint32(b[8:]), Size: binary.BigEndian.Uint32(b[12:])}, nil
}

// FillPing writes cycle ping's client data into buf, as rping does: the
// text "rdma-ping-<ping>: ", then letters from start upward wrapping from
// 'z' (122) to 'A' (65), and a NUL in the last octet. It returns the start
// letter of the next cycle.
func FillPing(buf []byte, ping int, start byte) byte {
	hdr := "rdma-ping-" + strconv.Itoa(ping) + ": "
	n := copy(buf, hdr)
	c := start
	for i := n; i < len(buf); i++ {
		buf[i] = c
		c++
		if c > 122 {
			c = 65
		}
	}
	if len(buf) > 0 {
		buf[len(buf)-1] = 0
	}
	start++
	if start > 122 {
		start = 65
	}
	return start
}

// FirstStart is the letter the first cycle starts with ('A').
const FirstStart byte = 65

// Region is a registered buffer the peer may read and write.
type Region struct {
	Buf  []byte
	Addr uint64 // advertised address (tagged offset of Buf[0])
	RKey uint32
}

// Conn is what the rping exchange needs from an established RDMA
// connection. Implementations keep one receive of InfoLen octets posted at
// all times, as rping does.
type Conn interface {
	// Register makes buf readable and writable by the peer.
	Register(buf []byte) (Region, error)
	// Send sends msg as one Send message and waits for its completion.
	Send(ctx context.Context, msg []byte) error
	// Recv waits for the next inbound Send and returns its payload.
	Recv(ctx context.Context) ([]byte, error)
	// Read reads n octets at the peer's (addr, rkey) into local.Buf[:n].
	Read(ctx context.Context, local Region, n int, addr uint64, rkey uint32) error
	// Write writes local.Buf[:n] to the peer's (addr, rkey).
	Write(ctx context.Context, local Region, n int, addr uint64, rkey uint32) error
}

// Options are rping's -C, -S, -V and -v.
type Options struct {
	Count    int // cycles; 0 means until the peer disconnects (server) or forever (client)
	Size     int // ping data size
	Validate bool
	// Verbose receives one line per cycle as rping -v prints it
	// ("ping data: ..." on the client, "server ping data: ..." on the server).
	Verbose func(line string)
}

// Stats counts what a run did.
// Its JSON keys are snake_case, as all of openiwarp's (docs/json.md).
type Stats struct {
	Cycles       int `json:"cycles"`
	BytesRead    int `json:"bytes_read"`    // RDMA Read payload (server)
	BytesWritten int `json:"bytes_written"` // RDMA Write payload (server)
	Sends        int `json:"sends"`
	Recvs        int `json:"recvs"`
}

// ErrMismatch is a client cycle whose sink differs from its source (-V).
var ErrMismatch = errors.New("rping: data mismatch")

// CycleError says at which cycle and step a run stopped.
type CycleError struct {
	Cycle int
	Step  string
	Err   error
}

func (e *CycleError) Error() string {
	return fmt.Sprintf("rping: cycle %d: %s: %v", e.Cycle, e.Step, e.Err)
}
func (e *CycleError) Unwrap() error { return e.Err }

// Client runs the client side of rping's ping loop on an established
// connection.
func Client(ctx context.Context, c Conn, o Options) (Stats, error) {
	var st Stats
	if o.Size < MinSize || o.Size > MaxSize {
		return st, fmt.Errorf("rping: invalid size %d (valid range is %d to %d)", o.Size, MinSize, MaxSize)
	}
	src, err := c.Register(make([]byte, o.Size))
	if err != nil {
		return st, fmt.Errorf("rping: register source: %w", err)
	}
	sink, err := c.Register(make([]byte, o.Size))
	if err != nil {
		return st, fmt.Errorf("rping: register sink: %w", err)
	}
	start := FirstStart
	for ping := 0; o.Count == 0 || ping < o.Count; ping++ {
		fail := func(step string, err error) (Stats, error) {
			return st, &CycleError{Cycle: ping, Step: step, Err: err}
		}
		start = FillPing(src.Buf, ping, start)
		clear(sink.Buf)
		adv := Info{Addr: src.Addr, RKey: src.RKey, Size: uint32(o.Size)}
		if err := c.Send(ctx, adv.Append(nil)); err != nil {
			return fail("send source advertisement", err)
		}
		st.Sends++
		if err := recvInfo(ctx, c, &st); err != nil {
			return fail("wait for go-ahead after RDMA Read", err)
		}
		adv = Info{Addr: sink.Addr, RKey: sink.RKey, Size: uint32(o.Size)}
		if err := c.Send(ctx, adv.Append(nil)); err != nil {
			return fail("send sink advertisement", err)
		}
		st.Sends++
		if err := recvInfo(ctx, c, &st); err != nil {
			return fail("wait for go-ahead after RDMA Write", err)
		}
		if o.Validate && string(src.Buf) != string(sink.Buf) {
			return fail("validate", fmt.Errorf("%w: first difference at octet %d", ErrMismatch, firstDiff(src.Buf, sink.Buf)))
		}
		if o.Verbose != nil {
			o.Verbose("ping data: " + cString(sink.Buf))
		}
		st.Cycles++
	}
	return st, nil
}

func recvInfo(ctx context.Context, c Conn, st *Stats) error {
	b, err := c.Recv(ctx)
	if err != nil {
		return err
	}
	st.Recvs++
	_, err = ParseInfo(b)
	return err
}

// Server runs the server side of rping's loop on an accepted connection:
// it serves cycles until the peer disconnects (Recv returns an error that
// isDisconnect accepts), or Count cycles if Count > 0. A disconnect reported
// on a cycle's last go-ahead ends the run normally: the client only closes
// once it has that go-ahead (or has failed, which it reports itself).
func Server(ctx context.Context, c Conn, o Options, isDisconnect func(error) bool) (Stats, error) {
	var st Stats
	if o.Size < MinSize || o.Size > MaxSize {
		return st, fmt.Errorf("rping: invalid size %d (valid range is %d to %d)", o.Size, MinSize, MaxSize)
	}
	buf, err := c.Register(make([]byte, o.Size))
	if err != nil {
		return st, fmt.Errorf("rping: register buffer: %w", err)
	}
	goAhead := make([]byte, InfoLen) // rping's server never fills its send buffer
	for ping := 0; o.Count == 0 || ping < o.Count; ping++ {
		fail := func(step string, err error) (Stats, error) {
			return st, &CycleError{Cycle: ping, Step: step, Err: err}
		}
		b, err := c.Recv(ctx)
		if err != nil {
			if isDisconnect != nil && isDisconnect(err) {
				return st, nil
			}
			return fail("wait for source advertisement", err)
		}
		st.Recvs++
		src, err := ParseInfo(b)
		if err != nil {
			return fail("source advertisement", err)
		}
		if int(src.Size) > len(buf.Buf) {
			return fail("source advertisement", fmt.Errorf("rping: peer size %d exceeds our buffer of %d", src.Size, len(buf.Buf)))
		}
		if err := c.Read(ctx, buf, int(src.Size), src.Addr, src.RKey); err != nil {
			return fail("RDMA Read", err)
		}
		st.BytesRead += int(src.Size)
		if o.Verbose != nil {
			o.Verbose("server ping data: " + cString(buf.Buf))
		}
		if err := c.Send(ctx, goAhead); err != nil {
			return fail("send go-ahead after RDMA Read", err)
		}
		st.Sends++
		b, err = c.Recv(ctx)
		if err != nil {
			return fail("wait for sink advertisement", err)
		}
		st.Recvs++
		sink, err := ParseInfo(b)
		if err != nil {
			return fail("sink advertisement", err)
		}
		n := len(cString(buf.Buf)) + 1 // strlen + NUL, as rping
		if n > len(buf.Buf) {
			n = len(buf.Buf)
		}
		if uint32(n) > sink.Size {
			return fail("sink advertisement", fmt.Errorf("rping: sink of %d octets cannot take %d", sink.Size, n))
		}
		if err := c.Write(ctx, buf, n, sink.Addr, sink.RKey); err != nil {
			return fail("RDMA Write", err)
		}
		st.BytesWritten += n
		// The client closes as soon as it has the last go-ahead: the
		// Send was handed to TCP before, so it completes with success.
		if err := c.Send(ctx, goAhead); err != nil {
			return fail("send go-ahead after RDMA Write", err)
		}
		st.Sends++
		st.Cycles++
	}
	return st, nil
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// ExpectedLine is the text rping -v prints for cycle ping with the given
// size (client: "ping data: " + it; server: "server ping data: " + it): what
// a harness compares a real rping's output with.
func ExpectedLine(ping, size int) string {
	buf := make([]byte, size)
	start := FirstStart
	for i := 0; i <= ping; i++ {
		start = FillPing(buf, i, start)
	}
	return cString(buf)
}
