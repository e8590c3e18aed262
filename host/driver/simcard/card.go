package simcard

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
)

// Kind is the registry name of the card.
const Kind = "sim"

// Card is the driver over the simulated card; Close also stops the
// simulation.
type Card struct {
	*rnic.Card
	Phys *Phys
}

// OpenWith starts a device made by nd behind a Phys of cfg and opens the
// driver over it.
func OpenWith(name string, cfg Config, nd NewDevice, opt rnic.Options) (*Card, error) {
	p, err := NewPhys(cfg, nd)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	if opt.Kind == "" {
		opt.Kind = Kind
	}
	c, err := rnic.OpenBackend(p, name, opt.Kind, opt)
	if err != nil {
		return nil, err
	}
	return &Card{Card: c, Phys: p}, nil
}

// Info is the driver's, with the cycles simulated and the transactions
// checked.
func (c *Card) Info() driver.Info {
	i := c.Card.Info()
	i.CheckedCycles = c.Phys.Cycles()
	i.CheckedWrites = c.Phys.Counts().Total()
	return i
}

// Close closes the driver (its QPs flush and end), then the simulation.
func (c *Card) Close() error {
	return errors.Join(c.Card.Close(), c.Phys.Close())
}
