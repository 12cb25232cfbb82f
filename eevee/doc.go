// Package eevee implements EEVEE (Evolving Evaluation Engine): finding the
// k benchmarks whose results best predict a model's results on a whole
// benchmark pool, as the GATE paper (section 3, Algorithms 1-3) describes
// and as its authors' code scores it.
//
// A Matrix holds models x metric columns; each column belongs to a
// benchmark and a task category and knows whether higher is better.
// Problem fixes the scoring choices (weighting, targets, columns, splits,
// meta-model shape); Scorer trains the MLP meta-models of every
// cross-validation split of a candidate and returns its score; Search runs
// the evolution; Predict places a new model among the pool's models.
//
// Everything here is deterministic for a given seed, whatever the number
// of workers: random streams are derived from the seed and the split or
// generation, never from scheduling.
package eevee
