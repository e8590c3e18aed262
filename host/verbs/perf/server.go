package perf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/host/verbs"
)

// ListenConfig is what a perf server should listen with: an IRD deep
// enough for the deepest Read window a client may open.
func ListenConfig() verbs.ListenConfig { return verbs.ListenConfig{IRD: maxRd, ORD: maxRd} }

const maxRd = 128

// Serve answers perf clients on ln with device until ctx ends (it then
// returns nil) or the device fails. Each connection is served on its own
// goroutine; logf, if not nil, reports each one.
func Serve(ctx context.Context, ln *verbs.Listener, device string, logf func(format string, args ...any)) error {
	dev, err := verbs.Open(device)
	if err != nil {
		return err
	}
	defer dev.Close()
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		req, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, verbs.ErrClosed) {
				return nil
			}
			return err
		}
		spec, err := parseSpec(req.PrivateData)
		if err != nil {
			logf("rejecting %v: %v", req.RemoteAddr(), err)
			req.Reject([]byte(err.Error()))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			logf("%v: %s %s, %d bytes x %d, depth %d", req.RemoteAddr(), spec.Test, spec.Mode, spec.Size, spec.Iters, spec.TxDepth)
			if err := serveOne(ctx, dev, req, spec); err != nil {
				logf("%v: %v", req.RemoteAddr(), err)
			}
		}()
	}
}

// endpoint is one side's verbs objects for a test.
type endpoint struct {
	pd  *verbs.PD
	cq  *verbs.CQ
	qp  *verbs.QP
	mr  *verbs.MR
	ctl *verbs.MR // small buffer for credits
	r   int       // receive slots (Send bandwidth)
	// Work requests and SGLs built in place for each post, as perftest
	// does: a posted WR is copied, so they can be reused at once.
	swr    [2]verbs.SendWR
	rwr    [1]verbs.RecvWR
	data   []verbs.SGE // the test's payload: Size bytes of mr
	whole  []verbs.SGE // all of mr, for receiving it
	ctlSGL [1]verbs.SGE
	ctlOut [4]byte
}

func newEndpoint(dev *verbs.Context, spec Spec) (*endpoint, error) {
	e := &endpoint{r: 2 * spec.TxDepth}
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		return nil, err
	}
	if e.cq, err = dev.CreateCQ(4*spec.TxDepth + 64); err != nil {
		return nil, err
	}
	in := dev.Info() // a card bounds the Reads in flight (the openiwarp card: 16)
	rd := min(spec.TxDepth, maxRd, in.MaxORD)
	if e.qp, err = e.pd.CreateQP(verbs.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, ORD: rd, IRD: min(maxRd, in.MaxIRD),
		Cap: verbs.QPCap{MaxSendWR: spec.TxDepth + 16, MaxRecvWR: e.r + 16}}); err != nil {
		return nil, err
	}
	if e.mr, err = e.pd.RegMR(make([]byte, max(spec.Size, 4)), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		return nil, err
	}
	if e.ctl, err = e.pd.RegMR(make([]byte, 4*(e.r+1)), verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	e.data, e.whole = []verbs.SGE{e.mr.SGE(0, spec.Size)}, []verbs.SGE{e.mr.SGE(0, e.mr.Len())}
	return e, nil
}

func (e *endpoint) close() {
	if e.qp != nil {
		e.qp.Destroy()
	}
}

// recvCtl posts receive id into its slot of the control buffer.
func (e *endpoint) recvCtl(id uint64) error {
	e.ctlSGL[0] = e.ctl.SGE(4*(int(id)%(e.r+1)), 4)
	e.rwr[0] = verbs.RecvWR{ID: id, SGL: e.ctlSGL[:]}
	return e.qp.PostRecv(e.rwr[:]...)
}

// recvData posts receive id into the data buffer.
func (e *endpoint) recvData(id uint64) error {
	e.rwr[0] = verbs.RecvWR{ID: id, SGL: e.whole}
	return e.qp.PostRecv(e.rwr[:]...)
}

// payload sets wr's data: the test's bytes of mr, inline when they fit.
func (e *endpoint) payload(wr verbs.SendWR, inline int) verbs.SendWR {
	if n := int(e.data[0].Length); n <= inline {
		wr.Inline = e.mr.Bytes()[:n:n]
	} else {
		wr.SGL = e.data
	}
	return wr
}

// latWRs builds the WRs of one latency iteration id: a Read of the
// peer's buffer at raddr/rkey, a Write there then an empty Send, or a
// Send of the payload. Only the Read is signaled: the others are done
// when the answer arrives.
func (e *endpoint) latWRs(s Spec, id uint64, raddr uint64, rkey verbs.STag) []verbs.SendWR {
	switch s.Test {
	case Read:
		e.swr[0] = verbs.SendWR{ID: id, Opcode: verbs.WRRDMARead, Signaled: true, SGL: e.data, RemoteAddr: raddr, RKey: rkey}
		return e.swr[:1]
	case Write:
		e.swr[0] = e.payload(verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, RemoteAddr: raddr, RKey: rkey}, s.Inline)
		e.swr[1] = verbs.SendWR{ID: id, Opcode: verbs.WRSend}
		return e.swr[:2]
	}
	e.swr[0] = e.payload(verbs.SendWR{ID: id, Opcode: verbs.WRSend}, s.Inline)
	return e.swr[:1]
}

// wait returns the next completion, failing on an error status.
func (e *endpoint) wait(ctx context.Context) (verbs.WC, error) {
	return e.checked(e.cq.Wait(ctx))
}

// checked fails on an error status.
func (e *endpoint) checked(wc verbs.WC, err error) (verbs.WC, error) {
	if err == nil && wc.Status != verbs.WCSuccess {
		err = fmt.Errorf("perf: %v completion of WR %d: %v (QP: %v)", wc.Opcode, wc.ID, wc.Status, e.qp.Err())
	}
	return wc, err
}

// waitRecv waits for the next receive completion, skipping send ones.
func (e *endpoint) waitRecv(ctx context.Context) (verbs.WC, error) {
	for {
		wc, err := e.wait(ctx)
		if err != nil || wc.Opcode == verbs.WCRecv {
			return wc, err
		}
	}
}

func (e *endpoint) sendCtl(v uint32) error {
	binary.LittleEndian.PutUint32(e.ctlOut[:], v)
	e.swr[0] = verbs.SendWR{Opcode: verbs.WRSend, Inline: e.ctlOut[:]}
	return e.qp.PostSend(e.swr[:1]...)
}

func serveOne(ctx context.Context, dev *verbs.Context, req *verbs.ConnRequest, spec Spec) error {
	e, err := newEndpoint(dev, spec)
	if err != nil {
		req.Reject([]byte(err.Error()))
		return err
	}
	defer e.close()
	switch {
	case spec.Test == Send && spec.Mode == BW:
		for i := range e.r {
			if err := e.recvData(uint64(i)); err != nil {
				return err
			}
		}
	case spec.Test == Send:
		err = e.recvData(0)
	default:
		err = e.recvCtl(0)
	}
	if err != nil {
		return err
	}
	rep, _ := json.Marshal(reply{Addr: e.mr.Addr(), RKey: uint32(e.mr.RKey())})
	if err := req.Accept(e.qp, rep); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 24*time.Hour)
	defer cancel()
	switch {
	case spec.Test == Send && spec.Mode == BW:
		// Every receive is reposted at once; credits go back every r/2.
		got, told := 0, 0
		for got < spec.Iters {
			if _, err := e.waitRecv(ctx); err != nil {
				return err
			}
			got++
			if err := e.recvData(uint64(got)); err != nil {
				return err
			}
			if got-told >= e.r/2 || got == spec.Iters {
				if err := e.sendCtl(uint32(got)); err != nil {
					return err
				}
				told = got
			}
		}
	case spec.Mode == Lat && spec.Test != Read:
		for i := range spec.Iters {
			if _, err := e.waitRecv(ctx); err != nil {
				return err
			}
			if spec.Test == Send {
				err = e.recvData(uint64(i + 1))
			} else {
				err = e.recvCtl(uint64(i + 1))
			}
			if err != nil {
				return err
			}
			if err := e.qp.PostSend(e.latWRs(spec, uint64(i), spec.Addr, verbs.STag(spec.RKey))...); err != nil {
				return err
			}
		}
	}
	// The client's "done", then our acknowledgement, then its disconnect.
	if _, err := e.waitRecv(ctx); err != nil {
		return err
	}
	if err := e.sendCtl(0); err != nil {
		return err
	}
	select {
	case <-e.qp.Done():
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	return nil
}
