package cardserve_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/openiwarp/openiwarp/test/cardserve"
)

// FuzzProxy feeds arbitrary bytes to ServeProxy as QEMU's side of the
// socket: whatever arrives, the Server answers or ends the connection with
// ErrProtocol, never panics or hangs.
func FuzzProxy(f *testing.F) {
	msg := func(cmd uint32, payload []byte) []byte {
		b := make([]byte, 16+len(payload))
		binary.LittleEndian.PutUint32(b, cmd)
		binary.LittleEndian.PutUint64(b[8:], uint64(len(payload)))
		copy(b[16:], payload)
		return b
	}
	f.Add(msg(3, cfgMsg(0, 0, 4)))
	f.Add(append(msg(2, cfgMsg(0x10, fakeBAR, 4)), msg(5, barMsg(fakeBAR, 0, 4))...))
	f.Add(append(msg(2, cfgMsg(0x10, fakeBAR, 4)), msg(4, barMsg(fakeBAR+0x48, 1, 4))...))
	f.Add(msg(0, make([]byte, 192)))
	f.Add(msg(7, nil))
	f.Add(msg(6, nil))
	f.Add([]byte{5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := cardserve.New(cardserve.Config{Card: cardserve.Model(64)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		theirs, ours, err := cardserve.ProxySocket()
		if err != nil {
			t.Fatal(err)
		}
		defer ours.Close()
		c, err := net.FileConn(theirs)
		theirs.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		uc := c.(*net.UnixConn)
		go func() {
			uc.Write(in)
			uc.CloseWrite()
		}()
		go io.Copy(io.Discard, uc) // the replies
		if err := s.ServeProxy(ours); err != nil && !errors.Is(err, cardserve.ErrProtocol) {
			t.Fatalf("ServeProxy: %v", err)
		}
	})
}
