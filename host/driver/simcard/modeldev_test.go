package simcard_test

import (
	"errors"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	"github.com/openiwarp/openiwarp/host/driver/simcard"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// modelDevice is a second card model standing in for the RTL, to test the
// backend's plumbing and its checker without Verilator: it steps one unit
// of work per cycle, lazily, so it runs behind the checking model as the
// RTL does. corrupt, if set, may change each of its DMA writes, or drop it
// (as a card that leaves something undone).
type modelDevice struct {
	c       *cardmodel.Card
	cycles  uint64
	corrupt corruptFunc
}

type corruptFunc func(addr uint64, p []byte) (drop bool)

type modelDevBus struct {
	simcard.Bus
	d *modelDevice
}

func (b modelDevBus) WriteMem(addr uint64, p []byte) error {
	if b.d.corrupt != nil {
		p = append([]byte(nil), p...)
		if b.d.corrupt(addr, p) {
			return nil
		}
	}
	return b.Bus.WriteMem(addr, p)
}

func newModelDevice(corrupt corruptFunc) simcard.NewDevice {
	return func(width int, bus simcard.Bus, _ hwsim.AXITiming, _ uint64) (simcard.Device, error) {
		d := &modelDevice{corrupt: corrupt}
		c, err := cardmodel.New(cardmodel.Config{Width: width, Host: modelDevBus{bus, d}})
		if err != nil {
			return nil, err
		}
		d.c = c
		return d, nil
	}
}

func (d *modelDevice) Read32(off uint32) (uint32, error) { return d.c.Read32(off) }

// Write32 answers a refused command OKAY, as the RTL does (its verdict is
// in CMD_STATUS, which the checker compares on the driver's read); the
// model's ErrRefused answer would count as a mismatch (seen once: a
// CLOSE of a QP already destroyed, seed 1795941099583564888).
func (d *modelDevice) Write32(off, v uint32) error {
	if err := d.c.Write32(off, v); !errors.Is(err, cardmodel.ErrRefused) {
		return err
	}
	return nil
}

func (d *modelDevice) Run(n int) (bool, error) {
	for i := 0; i < n; i++ {
		if !d.c.Step() {
			return i > 0, nil
		}
		d.cycles++
	}
	return true, nil
}
func (d *modelDevice) Cycles() uint64   { return d.cycles }
func (d *modelDevice) Describe() string { return "a second card model standing in for the RTL (test)" }
func (d *modelDevice) Close()           {}
