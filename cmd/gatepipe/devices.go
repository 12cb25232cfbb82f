package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/engine/devices"
)

func runDevices(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "devices", "devices\n\nLists the devices apply schedules on by default: the CPU cores and the NVIDIA\nGPUs nvidia-smi reports, restricted to CUDA_VISIBLE_DEVICES when it is set.")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	inv, err := c.discover(ctx)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe devices:", err)
		return exitRunFailure
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tID\tNAME\tMEMORY")
	fmt.Fprintf(tw, "cpu\tcpu:%d\t%d cores\t\n", inv.CPUs, inv.CPUs)
	for _, g := range inv.GPUs {
		fmt.Fprintf(tw, "gpu\tgpu:%s\t%s\t%d MiB\n", g.ID, g.Name, g.MemoryMiB)
	}
	tw.Flush()
	if inv.Note != "" {
		fmt.Fprintln(c.stdout, "("+inv.Note+")")
	}
	return exitOK
}

func (c *cli) discover(ctx context.Context) (devices.Inventory, error) {
	visible, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	return devices.Discover(ctx, visible, set)
}

// defaultDevices is every CPU core and every visible GPU.
func (c *cli) defaultDevices(ctx context.Context) (engine.Devices, string, error) {
	inv, err := c.discover(ctx)
	if err != nil {
		return engine.Devices{}, "", err
	}
	d := engine.Devices{CPUs: inv.CPUs}
	if n, err := strconv.Atoi(os.Getenv("SLURM_CPUS_PER_TASK")); err == nil && n > 0 {
		d.CPUs = n // inside a Slurm job: the allocation, not the machine
	}
	for _, g := range inv.GPUs {
		d.GPUs = append(d.GPUs, g.ID)
	}
	return d, inv.Note, nil
}

// expectedDurations reads the most recent run records for how long each
// instance took when it last ran.
func expectedDurations(cc *cache.Cache) func() map[string]time.Duration {
	return func() map[string]time.Duration {
		out := map[string]time.Duration{}
		paths, err := cc.Runs()
		if err != nil {
			return out
		}
		if len(paths) > 20 {
			paths = paths[len(paths)-20:]
		}
		for _, p := range paths { // oldest first, so newer runs win
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			var rec engine.RunRecord
			if json.Unmarshal(data, &rec) != nil {
				continue
			}
			for _, n := range rec.Nodes {
				if n.Status == engine.RunRan {
					out[n.Addr] = time.Duration(n.DurationMS * float64(time.Millisecond))
				}
			}
		}
		return out
	}
}
