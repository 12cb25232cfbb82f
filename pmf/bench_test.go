package pmf

import (
	"context"
	"os"
	"testing"

	"github.com/gatepipe/gatepipe/eevee"
)

// BenchmarkCompleteGATE times one fit (500 + 100 Gibbs sweeps, D = 10, and
// the three calibration fits) of the GATE paper matrix with 20% of its
// entries hidden, per method and column selection.
func BenchmarkCompleteGATE(b *testing.B) {
	f, err := os.Open("../stdlib/data/gate_table3.csv")
	if err != nil {
		b.Fatal(err)
	}
	m, err := eevee.LoadCSV(f, "gate_table3.csv")
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	for _, cols := range []string{"primary", "all"} {
		d, _ := maskShare(FromMatrix(m.Select(cols)), 0.2, 1)
		for _, name := range []string{"pmf", "bpmf", "ptf"} {
			method, _ := New(name, DefaultOptions())
			b.Run(cols+"/"+name, func(b *testing.B) {
				for range b.N {
					if _, err := method.Complete(context.Background(), d, 1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
