//go:build cgo

package main

// The sim card (the driver over the Verilated card) needs cgo; iwping built
// without it, as the guests' static copy is, offers every other card.
import _ "github.com/openiwarp/openiwarp/host/driver/simcard"
