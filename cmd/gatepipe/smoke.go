package main

import (
	"context"
	"sync"

	"github.com/gatepipe/gatepipe/internal/smokehub"
)

// smokeServer is the process's server of the smoke fixtures: -mirror
// smoke (and eval -scale smoke) name it; it serves on the loopback
// interface until the process ends.
type smokeServer struct {
	once sync.Once
	url  string
	err  error
}

// smokeMirror starts the smoke fixtures' server, once, and returns its URL.
func (c *cli) smokeMirror() (string, error) {
	if c.smoke == nil {
		c.smoke = &smokeServer{}
	}
	c.smoke.once.Do(func() {
		c.smoke.url, _, c.smoke.err = smokehub.Start(context.Background(), &smokehub.Lazy{Make: smokehub.SmallTier})
	})
	return c.smoke.url, c.smoke.err
}
