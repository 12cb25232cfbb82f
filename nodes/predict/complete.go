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
func (n *Node) complete(ctx context.Context, env *nodes.Env, pool *eevee.Matrix, row []float64) (*eevee.Prediction, *Validation, error) {
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
	eo.Seeds, eo.Workers = ValidationSeeds, max(env.Devices.CPUs, 1)
	ao := pmf.DefaultActiveOptions()
	ao.Seeds, ao.Rounds, ao.Workers = ValidationSeeds, ValidationRounds, eo.Workers
	evalFits := len(eo.Ratios) * eo.Seeds * len(methods)
	total := int64(evalFits + len(ao.Rules)*ao.Seeds*(ao.Rounds+1))
	// Validation runs on the columns the block selects (columns =
	// "primary" keeps it short); the prediction above used them all.
	d = pmf.FromMatrix(pool.Select(n.Opts.Columns))
	v := &Validation{Columns: n.Opts.Columns}
	if v.MaskedRatio, err = pmf.Evaluate(ctx, d, methods, eo, func(done, _ int) {
		env.Progress.Update(int64(done), total, "fits")
	}); err != nil {
		return nil, nil, err
	}
	sampler, ok := method.(*pmf.Sampler)
	if !ok {
		return pred, v, nil // a baseline has no acquisition rule to simulate
	}
	if v.Active, err = pmf.Simulate(ctx, d, sampler, ao, func(done, _ int) {
		env.Progress.Update(int64(evalFits+done), total, "fits")
	}); err != nil {
		return nil, nil, err
	}
	return pred, v, nil
}

// Validation is how well a pmf method predicts the pool itself.
type Validation struct {
	// Columns are the pool columns validated on (the block's columns).
	Columns string `json:"columns"`
	// MaskedRatio is the paper's protocol (ValidationSeeds seeds) beside
	// the two baselines.
	MaskedRatio []pmf.EvalRow `json:"masked_ratio"`
	// Active is the active-evaluation simulation: ValidationRounds
	// batches of 20 from 20% observed.
	Active []pmf.Curve `json:"active,omitempty"`
}

// The validation a predict block runs is smaller than `gatepipe pmf eval`
// and `pmf active` (10 seeds, 10 rounds) to keep an apply short.
const (
	ValidationSeeds  = 3
	ValidationRounds = 5
)

func countFinite(v []float64) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}
