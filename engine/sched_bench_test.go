package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/gatepipe/gatepipe/engine/dag"
	"github.com/gatepipe/gatepipe/nodes"
)

// BenchmarkSchedulingOverhead measures what the scheduler adds per node:
// the parallel dependency walk plus acquiring and releasing a device slot,
// for 10,000 nodes whose work is empty. Target < 100 µs per node.
func BenchmarkSchedulingOverhead(b *testing.B) {
	const n, width = 10000, 100
	g := dag.New()
	for i := 0; i < n; i++ {
		k := fmt.Sprint(i)
		g.Add(k)
		if i >= width {
			g.Connect(k, fmt.Sprint(i-width))
			g.Connect(k, fmt.Sprint(i-width+(i+1)%width))
		}
	}
	b.ResetTimer()
	for range b.N {
		s := newSlots(8, Devices{CPUs: 8})
		res := g.Walk(context.Background(), dag.WalkOptions{}, func(ctx context.Context, key string) error {
			_, release, err := s.acquire(ctx, nodes.Resources{CPUs: 1}, 0)
			if err != nil {
				return err
			}
			release()
			return nil
		})
		if len(res) != n {
			b.Fatalf("%d results", len(res))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1000, "µs/node")
}
