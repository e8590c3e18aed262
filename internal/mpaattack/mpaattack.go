// Package mpaattack attacks the MPA startup of a server that runs as a
// process (iwping -s -P, iwperf): it builds and starts the tool, plays a
// hostile Initiator against it (wrong key, PD_Length over 512, truncated
// frames, revision mismatches, a stalled half Request) and reads what the
// server did and logged. The tools' tests use it to check that a server
// survives each attack, reports it, and still serves a good client.
package mpaattack

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// Attack is one hostile startup.
type Attack struct {
	Name string
	// Send is what the attacker writes. It then half-closes, unless
	// Stall: then it keeps the connection open and silent (slow loris).
	Send  []byte
	Stall bool
	// Log is what the server's report of the failed startup says.
	Log string
	// Accepted: the Request is one the server may accept (it answers
	// with a Reply); the attacker then goes away without an FPDU.
	Accepted bool
}

// request is a well-formed Request with rev, flags and private data.
func request(rev mpa.Revision, enhanced bool, pd []byte) []byte {
	f := mpa.Frame{CRC: true, Rev: rev, Enhanced: enhanced, PrivateData: pd}
	b, err := f.Append(nil)
	if err != nil {
		panic(err) // the frames here are valid by construction
	}
	return b
}

// Attacks are the hostile startups every server must survive.
func Attacks() []Attack {
	wrongKey := request(mpa.Rev1, false, nil)
	copy(wrongKey, "MPA ID Rxx Frame")
	bigPD := request(mpa.Rev1, false, nil)
	binary.BigEndian.PutUint16(bigPD[18:], mpa.MaxPrivateData+1)
	bigPD = append(bigPD, make([]byte, mpa.MaxPrivateData+1)...)
	truncPD := request(mpa.Rev1, false, make([]byte, 100))[:mpa.FrameHeaderLen+50]
	reply := request(mpa.Rev1, false, nil)
	copy(reply, mpa.KeyReply[:])
	rev3 := request(mpa.Rev1, false, nil)
	rev3[17] = 3
	return []Attack{
		{Name: "wrong-key", Send: wrongKey, Log: "is neither"},
		{Name: "PD_Length-513", Send: bigPD, Log: "PD_Length 513 exceeds the 512"},
		{Name: "truncated-key", Send: []byte("MPA ID Req"), Log: "peer closed after 10 of 20 startup frame octets"},
		{Name: "truncated-private-data", Send: truncPD, Log: "peer closed after 70 of 120 startup frame octets"},
		{Name: "Reply-for-Request", Send: reply, Log: "both sides are Responders"},
		{Name: "Rev-3", Send: rev3, Log: "cannot interoperate with MPA revision 3"},
		{Name: "Rev-2-enhanced-without-IRD-ORD", Send: request(mpa.Rev2, true, []byte{1, 2}), Log: "fewer than the 4-octet IRD/ORD prefix"},
		{Name: "Rev-0-then-gone", Send: request(mpa.Rev0, false, nil), Accepted: true},
		{Name: "Rev-1-then-gone", Send: request(mpa.Rev1, false, nil), Accepted: true},
		{Name: "slow-loris", Send: []byte("MPA ID Req"), Stall: true, Log: "startup frame incomplete after 10 of 20 octets"},
	}
}

// Outcome is what the attacker saw.
type Outcome struct {
	Local string        // the attacker's address, as the server logs it
	Reply *mpa.Frame    // the server's Reply, if it sent one
	Held  time.Duration // from the dial until the server closed
}

// Run plays a against the server at addr and waits (up to watchdog) for
// the server to close the connection.
func Run(addr string, a Attack, watchdog time.Duration) (Outcome, error) {
	c, err := Dial(addr, a)
	if err != nil {
		return Outcome{}, err
	}
	return c.Wait(watchdog)
}

// Conn is an attack under way.
type Conn struct {
	a     Attack
	c     net.Conn
	start time.Time
}

// Dial connects to addr and sends a's octets (half-closing, unless a
// stalls).
func Dial(addr string, a Attack) (*Conn, error) {
	start := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mpaattack %s: %w", a.Name, err)
	}
	if _, err := c.Write(a.Send); err != nil {
		c.Close()
		return nil, fmt.Errorf("mpaattack %s: writing: %w", a.Name, err)
	}
	if !a.Stall {
		c.(*net.TCPConn).CloseWrite()
	}
	return &Conn{a: a, c: c, start: start}, nil
}

// Wait reads what the server sends until it closes the connection (up to
// watchdog), then closes it too.
func (c *Conn) Wait(watchdog time.Duration) (Outcome, error) {
	defer c.c.Close()
	o := Outcome{Local: c.c.LocalAddr().String()}
	c.c.SetReadDeadline(time.Now().Add(watchdog))
	got, err := io.ReadAll(c.c)
	o.Held = time.Since(c.start)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return o, fmt.Errorf("mpaattack %s: the server kept the connection for %v", c.a.Name, watchdog)
	}
	if len(got) > 0 {
		f, _, perr := mpa.ParseFrame(got, mpa.MaxPrivateData)
		if perr != nil {
			return o, fmt.Errorf("mpaattack %s: the server sent %d octets that are no Reply: %w", c.a.Name, len(got), perr)
		}
		o.Reply = &f
	}
	return o, nil
}

// Build builds the command pkg (an import path) into a temporary
// directory and returns the binary's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Server is a tool running as a process.
type Server struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	err    error
}

func (s *Server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.Write(p)
}

// Start starts bin with args; its stdout is discarded and its stderr kept
// (Stderr). The process is interrupted when the test ends.
func Start(t testing.TB, bin string, args ...string) *Server {
	t.Helper()
	s := &Server{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	s.cmd.Stderr = s
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		if s.Alive() {
			s.Stop(t)
		}
	})
	return s
}

// Stderr is what the server has written on stderr so far.
func (s *Server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Alive reports whether the process is still running.
func (s *Server) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// WaitLog waits (watchdog: testwatch.Patience) until a line of stderr
// contains every one of parts.
func (s *Server) WaitLog(t testing.TB, parts ...string) {
	t.Helper()
	watchdog := testwatch.Patience()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	for !s.logged(parts) {
		select {
		case <-s.exited:
			t.Fatalf("the server exited (%v) before logging %q; stderr:\n%s", s.err, parts, s.Stderr())
		case <-ctx.Done():
			t.Fatalf("the server did not log %q in %v; stderr:\n%s", parts, watchdog, s.Stderr())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *Server) logged(parts []string) bool {
lines:
	for _, l := range strings.Split(s.Stderr(), "\n") {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue lines
			}
		}
		return true
	}
	return false
}

// Stop interrupts the server (SIGINT) and waits for it to exit.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(testwatch.Patience()):
		s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("watchdog: the server did not exit within %v of SIGINT; stderr:\n%s", testwatch.Patience(), s.Stderr())
	}
}

// Target is a server under attack and how it reports.
type Target struct {
	Server *Server
	Addr   string
	// Tool prefixes its report of a failed startup: "TOOL: MPA startup
	// from ADDR failed: ...".
	Tool string
	// Limit is the server's startup limit: a stalled startup is held at
	// least this long.
	Limit time.Duration
	// Accepted checks an attack whose Request the server answered.
	Accepted func(t *testing.T, o Outcome)
	// Good runs a well-behaved client, which must be served.
	Good func(t *testing.T, after string)
}

// Every runs each attack of Attacks as a subtest of t: the server must
// report it (or, for a Request it can speak, pass Accepted), hold a stalled
// one for its startup limit, keep running and serve Good after it.
func (g *Target) Every(t *testing.T) {
	g.Good(t, "start")
	for _, a := range Attacks() {
		t.Run(a.Name, func(t *testing.T) {
			out, err := Run(g.Addr, a, testwatch.Patience())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case a.Accepted:
				if out.Reply == nil {
					t.Fatalf("a Request the server can speak got no Reply")
				}
				g.Accepted(t, out)
			case out.Reply != nil:
				t.Fatalf("a broken startup got a Reply: %+v", *out.Reply)
			default:
				g.Server.WaitLog(t, g.Tool+": MPA startup from "+out.Local+" failed: ", a.Log)
			}
			if a.Stall && out.Held < g.Limit {
				t.Fatalf("a stalled startup was dropped after %v, before the startup limit %v", out.Held, g.Limit)
			}
			if !g.Server.Alive() {
				t.Fatalf("the server died:\n%s", g.Server.Stderr())
			}
			g.Good(t, a.Name)
		})
	}
}
