package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// persistent starts iwping -s -P with args. stop cancels it, as SIGINT
// does, and returns its exit status and output once it has returned.
func persistent(t *testing.T, args ...string) (port int, ended *endedConns, stop func() (int, string, string)) {
	t.Helper()
	ended = &endedConns{ch: make(chan Summary, 100), seen: map[int]Summary{}}
	port, cancel, wait := startServer(t, append([]string{"-P"}, args...), (*options).servePersistent,
		func(o *options) { o.ended = func(s Summary) { ended.ch <- s } })
	return port, ended, func() (int, string, string) {
		cancel()
		return wait()
	}
}

// endedConns collects the connections a persistent server has reported.
type endedConns struct {
	ch   chan Summary
	seen map[int]Summary
}

// wait waits until the server has reported connections 1 to n, and
// returns the summary of the nth. A client's run ends before its
// server's: the server learns of the disconnect a moment later.
func (e *endedConns) wait(t *testing.T, n int) Summary {
	t.Helper()
	d := testwatch.Patience()
	timeout := time.After(d)
	for i := 1; i <= n; {
		if _, ok := e.seen[i]; ok {
			i++
			continue
		}
		select {
		case s := <-e.ch:
			e.seen[s.Conn] = s
		case <-timeout:
			testwatch.Stuck(t, fmt.Sprintf("the end of connection %d", i), d)
			t.FailNow()
		}
	}
	return e.seen[n]
}

// connSummaries parses the -json lines of a persistent server, sorted by
// connection number; the other lines of stdout (-v) are returned apart.
func connSummaries(t *testing.T, stdout string) (sums []Summary, other []string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if !strings.HasPrefix(l, "{") {
			other = append(other, l)
			continue
		}
		var s Summary
		require.NoError(t, json.Unmarshal([]byte(l), &s), "line %q", l)
		sums = append(sums, s)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Conn < sums[j].Conn })
	return sums, other
}

// dialQP connects an rping-ready QP (receive posted) to 127.0.0.1:port
// as the iwping client does, without running the ping loop.
func dialQP(t *testing.T, port int) *verbsConn {
	t.Helper()
	c, err := newVerbsConn("model", 1, 1)
	require.NoError(t, err)
	ctx, end := testwatch.Step(t, "dialing the server")
	defer end()
	if err := verbs.Dial(ctx, fmt.Sprintf("127.0.0.1:%d", port), c.qp, verbs.ConnParam{Rev: mpa.Rev2, NoCRC: true}); err != nil {
		c.Close()
		t.Fatalf("dial: %v", err)
	}
	return c
}

// quitMidCycle runs the client's half of cycle 0 up to the go-ahead after
// the server's RDMA Read, then disconnects: the server is left waiting for
// the sink advertisement.
func quitMidCycle(t *testing.T, port int) {
	c := dialQP(t, port)
	defer c.Close()
	ctx, end := testwatch.Step(t, "half an rping cycle")
	defer end()
	src, err := c.Register(make([]byte, rping.DefaultSize))
	require.NoError(t, err)
	rping.FillPing(src.Buf, 0, rping.FirstStart)
	require.NoError(t, c.Send(ctx, rping.Info{Addr: src.Addr, RKey: src.RKey, Size: rping.DefaultSize}.Append(nil)))
	_, err = c.Recv(ctx)
	require.NoError(t, err, "go-ahead after the RDMA Read")
}

func pingClient(port int, args ...string) (int, string, string) {
	return client(append([]string{"-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-V", "-timeout", "20s"}, args...)...)
}

// A persistent server serves clients one after another and several at
// once; clients that fail (a size it refuses, a client that leaves in the
// middle of a cycle) are reported and do not stop it; it stops cleanly and
// exits 0 when cancelled, with one JSON line per connection.
func TestPersistentServer(t *testing.T) {
	port, ended, stop := persistent(t, "-v", "-d", "-json")
	wantCycles := map[int]int{} // connection number -> cycles
	conn := 0
	good := func(cycles int) {
		t.Helper()
		code, out, errOut := pingClient(port, "-v", "-C", fmt.Sprint(cycles))
		require.Equal(t, 0, code, errOut)
		require.Len(t, lines(out, "ping data: "), cycles)
	}

	// Two in a row.
	for range 2 {
		conn++
		wantCycles[conn] = 3
		good(3)
	}

	// A connection held open while another one is served start to end:
	// only a server that serves connections concurrently gets through.
	held := dialQP(t, port)
	conn++
	heldConn := conn
	conn++
	wantCycles[conn] = 2
	good(2)
	ctx, end := testwatch.Step(t, "pinging on the held connection")
	defer end()
	st, err := rping.Client(ctx, held, rping.Options{Count: 4, Size: rping.DefaultSize, Validate: true})
	require.NoError(t, err)
	require.Equal(t, 4, st.Cycles)
	held.Close()
	wantCycles[heldConn] = 4

	// Two at once.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = pingClient(port, "-C", "25")
		}()
	}
	wg.Wait()
	for i := range 2 {
		require.Equal(t, 0, codes[i], errs[i])
		conn++
		wantCycles[conn] = 25
	}

	// Two failing clients, then a good one: the server is still there.
	code, _, errOut := pingClient(port, "-S", "4000", "-C", "1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cycle 0")
	conn++
	refused := conn
	quitMidCycle(t, port)
	conn++
	quit := conn
	// Its outcome is the peer's disconnect, not the server's stop.
	assert.Contains(t, ended.wait(t, quit).Error, "wait for sink advertisement")
	conn++
	wantCycles[conn] = 2
	good(2)

	ended.wait(t, conn)
	code, out, serr := stop()
	require.Equal(t, 0, code, serr)
	sums, other := connSummaries(t, out)
	require.Len(t, sums, conn, "one JSON line per connection:\n%s", out)
	total := 1 // the client that quit had its data read before it left
	for i, s := range sums {
		n := i + 1
		assert.Equal(t, n, s.Conn)
		assert.Equal(t, "server", s.Role)
		assert.True(t, strings.HasPrefix(s.Peer, "127.0.0.1:"), s.Peer)
		switch n {
		case refused:
			assert.Contains(t, s.Error, "peer size 4000 exceeds our buffer of 64")
			assert.Contains(t, serr, fmt.Sprintf("iwping: connection %d from %s: rping: cycle 0: source advertisement", n, s.Peer))
		case quit:
			assert.Contains(t, s.Error, "cycle 0: wait for sink advertisement")
			assert.Equal(t, rping.DefaultSize, s.Stats.BytesRead)
			assert.Contains(t, serr, fmt.Sprintf("iwping: connection %d from %s: rping: cycle 0: wait for sink advertisement", n, s.Peer))
		default:
			assert.Empty(t, s.Error, "connection %d", n)
			assert.Equal(t, wantCycles[n], s.Stats.Cycles, "connection %d", n)
			require.NotNil(t, s.MPA)
			assert.Contains(t, serr, fmt.Sprintf("iwping: connection %d from %s: %d cycle(s) in ", n, s.Peer, wantCycles[n]))
			total += wantCycles[n]
		}
	}
	assert.Len(t, other, total, "one -v line per cycle served")
	for _, l := range other {
		assert.True(t, strings.HasPrefix(l, "server ping data: rdma-ping-"), "%q", l)
	}
	assert.Contains(t, serr, fmt.Sprintf("iwping: stopping after %d connection(s): context canceled", conn))
}

// Without -json and -d a persistent server prints only the failures and,
// with -v, rping's ping data.
func TestPersistentQuietOutput(t *testing.T) {
	port, ended, stop := persistent(t)
	code, _, errOut := pingClient(port, "-C", "2")
	require.Equal(t, 0, code, errOut)
	quitMidCycle(t, port)
	ended.wait(t, 2)
	code, out, serr := stop()
	require.Equal(t, 0, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(serr, "\n"), "%q", serr)
	assert.Contains(t, serr, "iwping: connection 2 from 127.0.0.1:")
}

// waitListening waits until something accepts TCP connections on port.
func waitListening(t *testing.T, port int) {
	t.Helper()
	if !testwatch.Until(t, fmt.Sprintf("a listener on port %d", port), func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.FailNow()
	}
}

// runServer runs the whole command (flags, signals) in the background.
func runServer(t *testing.T, args ...string) (port int, wait func() (int, string, string)) {
	port = freePort(t)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"-s", "-P", "-a", "127.0.0.1", "-p", fmt.Sprint(port)}, args...), &stdout, &stderr)
	}()
	return port, func() (int, string, string) {
		code, ok := testwatch.Wait(t, done, "the server to stop")
		if !ok {
			t.FailNow()
		}
		return code, stdout.String(), stderr.String()
	}
}

// -timeout bounds a persistent server's run: it stops, cutting the
// connection still running (reported as such), and exits 0.
func TestPersistentStopsAtTimeout(t *testing.T) {
	// The bound must outlast the first client's two pings however loaded
	// the machine is; the endless client then waits for it.
	port, wait := runServer(t, "-timeout", "8s", "-json")
	waitListening(t, port)
	code, _, errOut := pingClient(port, "-C", "2")
	require.Equal(t, 0, code, errOut)
	// A client that pings until the server goes away.
	ccode := make(chan int, 1)
	go func() { c, _, _ := pingClient(port, "-C", "0"); ccode <- c }()
	code, out, serr := wait()
	require.Equal(t, 0, code, serr)
	assert.Equal(t, 1, <-ccode, "the endless client loses its server")
	sums, other := connSummaries(t, out)
	assert.Empty(t, other)
	require.Len(t, sums, 2, out)
	assert.Empty(t, sums[0].Error)
	assert.Equal(t, 2, sums[0].Stats.Cycles)
	assert.Contains(t, sums[1].Error, "cut as the server stopped")
	assert.Contains(t, sums[1].Error, "deadline exceeded")
}

// SIGINT stops a persistent server cleanly: exit status 0.
func TestPersistentStopsOnSIGINT(t *testing.T) {
	port, wait := runServer(t, "-json")
	waitListening(t, port) // the handler is installed before Listen
	code, _, errOut := pingClient(port, "-C", "3")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	code, out, serr := wait()
	require.Equal(t, 0, code, serr)
	sums, _ := connSummaries(t, out)
	require.Len(t, sums, 1)
	assert.Equal(t, 3, sums[0].Stats.Cycles)
}

// A listener that cannot listen is the one failure of a persistent server.
func TestPersistentListenFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	code, _, errOut := client("-s", "-P", "-a", "127.0.0.1", "-p", fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "listen:")
	assert.Contains(t, errOut, "address already in use")
}

// -I makes the connection from the given source address: the server sees
// 127.0.0.2 (all of 127.0.0.0/8 is loopback on Linux) as its peer.
func TestSourceAddress(t *testing.T) {
	port, ended, stop := persistent(t, "-json")
	code, out, errOut := pingClient(port, "-I", "127.0.0.2", "-C", "2", "-json")
	require.Equal(t, 0, code, errOut)
	var cs Summary
	require.NoError(t, json.Unmarshal([]byte(out), &cs))
	assert.True(t, strings.HasPrefix(cs.Local, "127.0.0.2:"), cs.Local)
	// Without -I the kernel picks 127.0.0.1 for a 127.0.0.1 server.
	code, _, errOut = pingClient(port, "-C", "1")
	require.Equal(t, 0, code, errOut)
	// An address this host does not have cannot be bound.
	code, _, errOut = pingClient(port, "-I", "192.0.2.1", "-C", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "192.0.2.1")
	assert.Contains(t, errOut, "bind")

	ended.wait(t, 2)
	_, sout, serr := stop()
	sums, _ := connSummaries(t, sout)
	require.Len(t, sums, 2, serr)
	assert.Empty(t, sums[0].Error)
	assert.Empty(t, sums[1].Error)
	assert.Equal(t, cs.Local, sums[0].Peer, "the server's peer is the client's source")
	assert.Equal(t, cs.Peer, sums[0].Local)
	assert.Equal(t, 2, sums[0].Stats.Cycles)
	assert.True(t, strings.HasPrefix(sums[1].Peer, "127.0.0.1:"), sums[1].Peer)
}
