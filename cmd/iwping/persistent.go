package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/host/verbs"
)

// servePersistent is rping -s -P: it accepts every connection and serves
// each in its own goroutine (rping_persistent_server_thread) until ctx
// ends (SIGINT, SIGTERM) or -timeout, if given, runs out. Connections still
// running then are cut, and reported like the others. It returns an error
// only if the listener fails: each connection's outcome is reported as it
// ends (reportConn).
func (o *options) servePersistent(ctx context.Context) error {
	if o.timeoutSet {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	srv := *o
	srv.stdout, srv.stderr = &lockedWriter{w: o.stdout}, &lockedWriter{w: o.stderr}
	ln, err := srv.listen(0)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after ln.Close: the connections end with ctx
	defer ln.Close()
	for n := 1; ; n++ {
		req, err := ln.Accept(ctx)
		if ctx.Err() != nil {
			if err == nil {
				_ = req.Reject(nil) // arrived as the server stopped
			}
			if srv.debug {
				fmt.Fprintf(srv.stderr, "iwping: stopping after %d connection(s): %v\n", n-1, context.Cause(ctx))
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.serveConn(ctx, n, req)
		}()
	}
}

// serveConn serves connection request n of a persistent server on a card
// of its own, as rping's server does for its one connection.
func (o *options) serveConn(ctx context.Context, n int, req *verbs.ConnRequest) {
	start := time.Now()
	sum := o.newSummary()
	sum.Conn, sum.Peer = n, req.RemoteAddr().String()
	ec, err := o.accept(req)
	if err == nil {
		err = o.converse(ctx, ec, sum)
		ec.Close()
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("cut as the server stopped: %w", err)
	}
	sum.elapsed = time.Since(start)
	o.reportConn(sum, err)
	if o.ended != nil {
		o.ended(*sum)
	}
}

// reportConn says how a persistent server's connection ended: on stderr
// if it failed (with -d also if it did not), and as one JSON line on
// stdout with -json.
func (o *options) reportConn(sum *Summary, err error) {
	sum.finish(err)
	switch {
	case err != nil:
		fmt.Fprintf(o.stderr, "iwping: connection %d from %s: %v\n", sum.Conn, sum.Peer, err)
	case o.debug && o.example:
		fmt.Fprintf(o.stderr, "iwping: connection %d from %s: example exchange done in %.3f ms\n", sum.Conn, sum.Peer, sum.ElapsedMS)
	case o.debug:
		fmt.Fprintf(o.stderr, "iwping: connection %d from %s: %d cycle(s) in %.3f ms, closed cleanly\n", sum.Conn, sum.Peer, sum.Stats.Cycles, sum.ElapsedMS)
	}
	if o.json {
		b, jerr := json.Marshal(sum)
		if jerr != nil { // every field is a plain value; kept for safety
			fmt.Fprintf(o.stderr, "iwping: connection %d: JSON summary: %v\n", sum.Conn, jerr)
			return
		}
		_, _ = o.stdout.Write(append(b, '\n'))
	}
}

// lockedWriter lets concurrent connections share an output: each Write
// (one line, as fmt.Fprint* writes it) goes out whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
