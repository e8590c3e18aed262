package ipoib

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
)

var daemonProfile = flag.String("daemon-cpuprofile", "", "directory where BenchmarkIPoIBCM's daemons write CPU profiles (node0.pprof, node1.pprof)")

// benchMTU is the TUN MTU of the link and of the floor: the connected-mode
// MTU of Linux IPoIB-CM (and ipoibcm's default).
const benchMTU = ipoibcm.LinuxReceiveMTU - ipoibcm.HeaderLen

// benchBytes is what one benchmark iteration sends over one TCP connection.
const benchBytes = 32 << 20

// BenchmarkIPoIBCM measures TCP throughput across the ipoibcm link (TCP in
// IP in RDMAP Sends over MPA over the underlay TCP); BenchmarkIPoIBCMBaseline
// measures the same transfer over the bare veth pair under it, and
// BenchmarkIPoIBCMFloor across the TUN relay floor (floor.go), the least a
// user-space link over TUN devices costs here. Each builds the same
// two-namespace topology in the same `go test` run (benchratio pairs the
// floor with the same baseline). Both also report the processor time their
// two processes spend per MiB moved (daemon-cpu-ms/MiB), which load on the
// machine hardly changes.
func BenchmarkIPoIBCM(b *testing.B) {
	e := NewEnv(b, 2)
	var ds []*Daemon
	for i, nd := range e.Nodes {
		extra := []string{"-mtu", fmt.Sprint(benchMTU)}
		if *daemonProfile != "" {
			extra = append(extra, "-cpuprofile", filepath.Join(*daemonProfile, fmt.Sprintf("node%d.pprof", i)))
		}
		ds = append(ds, e.Start(nd, extra...))
	}
	b.Run("tcp", func(b *testing.B) { benchLink(b, e, ds, e.Nodes[1].V4) })
}

func BenchmarkIPoIBCMBaseline(b *testing.B) {
	e := NewEnv(b, 2)
	b.Run("tcp", func(b *testing.B) { benchTCP(b, e.Nodes[0].NS, e.Nodes[1].NS, e.Nodes[1].Underlay) })
}

func BenchmarkIPoIBCMFloor(b *testing.B) {
	e := NewEnv(b, 2)
	ds := e.StartFloor(benchMTU)
	b.Run("tcp", func(b *testing.B) { benchLink(b, e, ds, e.Nodes[1].V4) })
}

// benchLink runs benchTCP from the first node to the second at to, across
// the link ds make, and reports the processor time of ds per MiB.
func benchLink(b *testing.B, e *Env, ds []*Daemon, to netip.Addr) {
	cpu := func() time.Duration {
		var sum time.Duration
		for _, d := range ds {
			t, err := d.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			sum += t
		}
		return sum
	}
	before := cpu()
	benchTCP(b, e.Nodes[0].NS, e.Nodes[1].NS, to)
	used := cpu() - before
	b.ReportMetric(float64(used.Milliseconds())/float64(b.N*benchBytes>>20), "daemon-cpu-ms/MiB")
}

// benchTCP sends benchBytes per iteration from src to a sink at to in dst.
func benchTCP(b *testing.B, src, dst string, to netip.Addr) {
	var ln net.Listener
	addr := netip.AddrPortFrom(to, 5201).String()
	if err := In(dst, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, err = io.Copy(io.Discard, c)
			c.Close()
			done <- err
		}
	}()
	chunk := make([]byte, 256<<10)
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var c net.Conn
		if err := In(src, func() error {
			var err error
			c, err = net.Dial("tcp", addr)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		for n := 0; n < benchBytes; n += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		c.(*net.TCPConn).CloseWrite()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
