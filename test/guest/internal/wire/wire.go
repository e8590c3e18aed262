// Package wire is the line protocol between the host side of test/guest and
// the agent that runs inside the guest. Each message is one JSON object on
// one line, carried over a virtio-serial port named PortName.
package wire

// PortName is the virtio-serial port name the agent looks for under
// /sys/class/virtio-ports/*/name.
const PortName = "oiw.agent"

// Request operations (host to guest).
const (
	OpHello    = "hello"    // answered by EvReady
	OpStart    = "start"    // start Argv; answered by EvStarted or EvError, then EvOut*, EvExit
	OpSignal   = "signal"   // send Signal to the process started by ID
	OpShutdown = "shutdown" // agent exits; init syncs and powers off
)

// Event kinds (guest to host).
const (
	EvReady   = "ready"
	EvStarted = "started"
	EvOut     = "out"   // a chunk of output: Fd 1 (stdout) or 2 (stderr)
	EvExit    = "exit"  // the process ended: Code, or Signal if killed
	EvError   = "error" // the request failed: Err
)

// Request is one host-to-guest message.
type Request struct {
	ID     uint64   `json:"id"`
	Op     string   `json:"op"`
	Argv   []string `json:"argv,omitempty"`
	Env    []string `json:"env,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Signal int      `json:"sig,omitempty"`
}

// Event is one guest-to-host message.
type Event struct {
	ID     uint64 `json:"id"`
	Ev     string `json:"ev"`
	Data   []byte `json:"data,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"sig,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Fd     int    `json:"fd,omitempty"`
	Err    string `json:"err,omitempty"`
	Kernel string `json:"kernel,omitempty"` // EvReady: uname release
}
