package main

import (
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/nodes"
)

// TestWallTimeSchedulesAsApply: nodes start when what they wait on is done
// and their devices are free, longest first.
func TestWallTimeSchedulesAsApply(t *testing.T) {
	node := func(addr string, d time.Duration, cpus, gpus int, after ...string) timedNode {
		return timedNode{Estimate: engine.Estimate{Addr: addr, Resources: nodes.Resources{CPUs: cpus, GPUs: gpus}, After: after}, d: d, known: true}
	}
	h := time.Hour
	for _, c := range []struct {
		name  string
		nodes []timedNode
		devs  engine.Devices
		want  time.Duration
	}{
		{"side by side", []timedNode{node("a", 3*h, 1, 0), node("b", 2*h, 1, 0)}, engine.Devices{CPUs: 2}, 3 * h},
		{"one CPU", []timedNode{node("a", 3*h, 1, 0), node("b", 2*h, 1, 0)}, engine.Devices{CPUs: 1}, 5 * h},
		{"longest first", []timedNode{node("a", h, 1, 0), node("b", h, 1, 0), node("c", 2*h, 1, 0)}, engine.Devices{CPUs: 2}, 2 * h},
		{"waits", []timedNode{node("a", h, 1, 0), node("b", 2*h, 1, 0, "a")}, engine.Devices{CPUs: 4}, 3 * h},
		{"one GPU", []timedNode{node("a", h, 1, 1), node("b", h, 1, 1)}, engine.Devices{CPUs: 8, GPUs: []string{"0"}}, 2 * h},
		{"a shared GPU", []timedNode{node("a", h, 1, 1), node("b", h, 1, 1)}, engine.Devices{CPUs: 8, GPUs: []string{"0"}, GPUShare: 2}, h},
		{"more CPUs than there are", []timedNode{node("a", h, 8, 0)}, engine.Devices{CPUs: 2}, h},
	} {
		if got := wallTime(c.nodes, c.devs); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRoughDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Millisecond, "0.1s"}, {300 * time.Millisecond, "0.3s"}, {2450 * time.Millisecond, "2.5s"}, {42 * time.Second, "42s"}, {12 * time.Minute, "12 min"},
		{200 * time.Minute, "3.3 h"}, {30 * time.Hour, "30.0 h"}, {100 * time.Hour, "4.2 days"},
	} {
		if got := roughDuration(c.d); got != c.want {
			t.Errorf("%v: %q, want %q", c.d, got, c.want)
		}
	}
}
