package predict

import (
	"context"
	"math"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pmf"
)

// complete predicts the measured model's missing results by completing
// the pool matrix with its row added (a pmf method): the posterior mean
// and standard deviation of each cell. With validate, the method is also
// scored on the pool by the masked-ratio protocol against the baselines.
func (n *Node) complete(ctx context.Context, env *nodes.Env, pool *eevee.Matrix, row []float64) (*eevee.Prediction, []pmf.EvalRow, error) {
	o := pmf.DefaultOptions()
	o.Latent = n.latent
	method, err := pmf.New(n.method, o)
	if err != nil {
		return nil, nil, err
	}
	ext := &eevee.Matrix{Models: append(append([]string(nil), pool.Models...), "new"), Columns: pool.Columns,
		Values: append(append([][]float64(nil), pool.Values...), row)}
	d := pmf.FromMatrix(ext)
	c, err := method.Complete(ctx, d, n.Opts.Seed)
	if err != nil {
		return nil, nil, err
	}
	last := len(ext.Models) - 1
	pred := &eevee.Prediction{Columns: pool.Columns, Mean: c.Mean[last], Std: c.Std[last]}
	env.Log.Info().Str("method", method.Name()).Float64("noise", c.Noise).Int("measured", countFinite(row)).Msg("completed the matrix")
	if !n.validate {
		return pred, nil, nil
	}
	methods := []pmf.Method{pmf.GlobalMean{}, pmf.MeanOfMeans{}, method}
	eo := pmf.DefaultEvalOptions()
	eo.Seeds, eo.Workers = 3, max(env.Devices.CPUs, 1)
	rows, err := pmf.Evaluate(ctx, pmf.FromMatrix(pool), methods, eo, func(done, total int) {
		env.Progress.Update(int64(done), int64(total), "fits")
	})
	if err != nil {
		return nil, nil, err
	}
	return pred, rows, nil
}

func countFinite(v []float64) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}
