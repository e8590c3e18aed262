package pcapio

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpPair returns both ends of a fresh TCP connection on 127.0.0.1.
func tcpPair(t testing.TB) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-done
	require.NotNil(t, server)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// decodeCapture reassembles every connection of a capture file.
func decodeCapture(t testing.TB, file []byte) (*collector, []Segment) {
	col, cfg := newCollector()
	a := NewAssembler(cfg)
	var segs []Segment
	for _, p := range readAll(t, file) {
		s, err := DecodeTCP(p.LinkType, p.Data)
		require.NoError(t, err)
		s.Payload = append([]byte(nil), s.Payload...)
		segs = append(segs, s)
		require.NoError(t, a.Add(&s, p.Index))
	}
	a.Flush()
	return col, segs
}

// TestRecordConcurrent records one end of a real TCP connection while a
// reader and a writer goroutine use it at once, and checks the capture
// holds both byte streams, the handshake and both FINs.
func TestRecordConcurrent(t *testing.T) {
	client, server := tcpPair(t)
	var file bytes.Buffer
	w, err := NewWriter(&file, LinkEthernet)
	require.NoError(t, err)
	rc, err := Record(w, server, false, nil)
	require.NoError(t, err)

	seed := uint64(rand.Uint32())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	up, down := make([]byte, 300000), make([]byte, 200000)
	for i := range up {
		up[i] = byte(rng.Uint32())
	}
	for i := range down {
		down[i] = byte(rng.Uint32())
	}
	var wg sync.WaitGroup
	var got bytes.Buffer
	wg.Add(3)
	go func() { // the peer sends "up" in random pieces, then closes its side
		defer wg.Done()
		for off := 0; off < len(up); {
			n := min(1+rng.IntN(70000), len(up)-off)
			_, err := client.Write(up[off : off+n])
			assert.NoError(t, err)
			off += n
		}
		assert.NoError(t, client.(*net.TCPConn).CloseWrite())
	}()
	go func() { // the peer drains "down"
		defer wg.Done()
		b, err := io.ReadAll(client)
		assert.NoError(t, err)
		assert.True(t, bytes.Equal(down, b), "peer received %d octets", len(b))
	}()
	go func() { // the recorded end reads "up" while the main goroutine writes
		defer wg.Done()
		_, err := io.Copy(&got, rc)
		assert.NoError(t, err)
	}()
	for off := 0; off < len(down); off += 9000 {
		_, err := rc.Write(down[off:min(off+9000, len(down))])
		require.NoError(t, err)
	}
	require.NoError(t, rc.CloseWrite())
	wg.Wait()
	require.NoError(t, rc.Close())
	require.True(t, bytes.Equal(up, got.Bytes()))

	col, segs := decodeCapture(t, file.Bytes())
	require.Len(t, col.conns, 1)
	c := col.conns[0]
	assert.Equal(t, client.LocalAddr().String(), c.Client.String())
	assert.Equal(t, server.LocalAddr().String(), c.Server.String())
	assert.True(t, bytes.Equal(up, col.stream(0, 0)), "client stream in the capture")
	assert.True(t, bytes.Equal(down, col.stream(0, 1)), "server stream in the capture")
	assert.Equal(t, "FIN", col.ends[c.Streams[0]])
	assert.Equal(t, "FIN", col.ends[c.Streams[1]])
	assert.Equal(t, FlagSYN, segs[0].Flags)
	assert.Equal(t, FlagSYN|FlagACK, segs[1].Flags)
	assert.Equal(t, segs[0].Seq+1, segs[1].Ack)
	for _, s := range segs[3:] {
		if c.Server == s.Src && len(s.Payload) > 0 && s.Seq-segs[1].Seq-1 < 198000 {
			assert.Equal(t, 9000, len(s.Payload), "one segment per Write")
		}
		assert.LessOrEqual(t, len(s.Payload), MaxSegmentPayload)
	}
}

// TestRecordPairKeepsWriteBoundaries checks that with both ends recorded
// every segment is exactly one Write, in the order the Writes were made,
// with deterministic sequence numbers and timestamps when asked.
func TestRecordPairKeepsWriteBoundaries(t *testing.T) {
	client, server := tcpPair(t)
	var file bytes.Buffer
	w, err := NewWriter(&file, LinkEthernet)
	require.NoError(t, err)
	tick := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opt := &RecordOptions{ISN: [2]uint32{1000, 2000}, Clock: func() time.Time { tick = tick.Add(time.Millisecond); return tick }}
	c, s, err := RecordPair(w, client, server, opt)
	require.NoError(t, err)
	msgs := []string{"request", "reply", "one", "two", "three"}
	for i, m := range msgs {
		from, to := c, s
		if i%2 == 1 {
			from, to = s, c
		}
		_, err := from.Write([]byte(m))
		require.NoError(t, err)
		b := make([]byte, len(m))
		_, err = io.ReadFull(to, b)
		require.NoError(t, err)
	}
	big := make([]byte, MaxSegmentPayload+10)
	go func() { _, _ = io.Copy(io.Discard, s) }()
	_, err = c.Write(big)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, s.Close())

	_, segs := decodeCapture(t, file.Bytes())
	var payloads []string
	for _, sg := range segs {
		if len(sg.Payload) > 0 && len(sg.Payload) < 100 {
			payloads = append(payloads, string(sg.Payload))
		}
	}
	assert.Equal(t, msgs, payloads[:len(msgs)])
	n := len(segs)
	require.GreaterOrEqual(t, n, 3+5+2+2)
	assert.Equal(t, uint32(1000), segs[0].Seq)
	assert.Equal(t, uint32(2000), segs[1].Seq)
	assert.Equal(t, uint32(1001), segs[3].Seq, "first data segment follows the SYN")
	assert.Len(t, segs[n-4].Payload, MaxSegmentPayload, "a long Write is split")
	assert.Len(t, segs[n-3].Payload, 10)
	assert.Equal(t, FlagFIN|FlagACK, segs[n-2].Flags)
	assert.Equal(t, FlagFIN|FlagACK, segs[n-1].Flags)
	pk := readAll(t, file.Bytes())
	assert.Equal(t, time.Date(2026, 1, 1, 0, 0, 0, 1e6, time.UTC), pk[0].Time)
}
