package pcapio

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"
)

// Writer writes a classic pcap file (microsecond timestamps, little-endian
// headers). It is safe for concurrent use: each packet record is written
// whole under a lock, so several recorders may share one file.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	lt  LinkType
	buf []byte
	err error
}

// pcap magic numbers, as read in the file's own byte order.
const (
	magicMicro = 0xa1b2c3d4
	magicNano  = 0xa1b23c4d
	// maxSnapLen is the snapshot length we write, and the largest record
	// we accept when reading: no sensible frame is bigger.
	maxSnapLen = 262144
)

// NewWriter writes the pcap global header for link type lt to w.
func NewWriter(w io.Writer, lt LinkType) (*Writer, error) {
	h := make([]byte, 0, 24)
	h = binary.LittleEndian.AppendUint32(h, magicMicro)
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 4)
	h = binary.LittleEndian.AppendUint32(h, 0) // thiszone
	h = binary.LittleEndian.AppendUint32(h, 0) // sigfigs
	h = binary.LittleEndian.AppendUint32(h, maxSnapLen)
	h = binary.LittleEndian.AppendUint32(h, uint32(lt))
	if _, err := w.Write(h); err != nil {
		return nil, fmt.Errorf("pcapio: writing pcap header: %w", err)
	}
	return &Writer{w: w, lt: lt}, nil
}

// LinkType returns the link type of every packet in the file.
func (w *Writer) LinkType() LinkType { return w.lt }

// WritePacket writes one packet record. After a write error every later
// call returns that error.
func (w *Writer) WritePacket(ts time.Time, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLocked(ts, data)
}

func (w *Writer) writeLocked(ts time.Time, data []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(data) > maxSnapLen {
		return fmt.Errorf("pcapio: %d-octet packet exceeds the snapshot length %d", len(data), maxSnapLen)
	}
	us := ts.UnixMicro()
	b := w.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(us/1e6))
	b = binary.LittleEndian.AppendUint32(b, uint32(us%1e6))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("pcapio: writing packet record: %w", err)
	}
	return w.err
}

// WriteSegment builds the Ethernet frame of s (see AppendFrame) and writes
// it. The writer's link type must be LinkEthernet.
func (w *Writer) WriteSegment(ts time.Time, s *Segment, fromClient bool) error {
	if w.lt != LinkEthernet {
		return fmt.Errorf("pcapio: WriteSegment needs an Ethernet capture, this one is %v", w.lt)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	frame, err := AppendFrame(nil, s, fromClient)
	if err != nil {
		return err
	}
	return w.writeLocked(ts, frame)
}
