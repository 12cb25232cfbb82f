package train

import (
	"fmt"
	"math/rand/v2"
)

// What another runtime (the torch one) needs to train the model Train
// would: the same draws, and the same metrics of its predictions.

// DrawBatches returns the example indices of every iteration's batch,
// iteration i's at [i*b, (i+1)*b), as Train draws them from the recipe's
// seed.
func DrawBatches(n, b, iterations int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, trainSamplingStream))
	out := make([]int32, 0, b*iterations)
	for range iterations {
		for _, k := range drawExamples(rng, n, b) {
			out = append(out, int32(k))
		}
	}
	return out
}

// EpisodeSizes returns the few-shot head's ways, shots and queries
// (defaults filled in).
func EpisodeSizes(h HeadSpec) (ways, shots, queries int) { return h.episodeShape() }

// TrainEpisodes returns the training episodes Train draws for a few-shot
// head from d's labels: iterations lists of ways*(shots+queries) example
// indices, the support set by class, then the queries by class.
func TrainEpisodes(d *Data, h HeadSpec, iterations int, seed uint64) ([][]int, error) {
	ways, shots, queries := h.episodeShape()
	return d.episodes(rand.New(rand.NewPCG(seed, 0xe9)), iterations, ways, shots, queries)
}

// EvalShots are the shots the few-shot evaluation runs episodes with:
// 1 and the head's shots.
func EvalShots(h HeadSpec) []int {
	_, shots, _ := h.episodeShape()
	if shots == 1 {
		return []int{1}
	}
	return []int{1, shots}
}

// EvalEpisodes returns the evaluation episodes of a setting of k shots
// on d, as the evaluation draws them.
func EvalEpisodes(d *Data, h HeadSpec, k int) ([][]int, error) {
	ways, _, queries := h.episodeShape()
	return d.episodes(rand.New(rand.NewPCG(uint64(k), 0xe7a1)), evalEpisodes, ways, k, queries)
}

// MetricsOf computes a task's metrics from the top-k ensemble's
// predictions on d, as Train does: probabilities (classification, video,
// relational), sigmoid outputs (multi-label), values in target units
// (regression), per-pixel probabilities pixel-major (segmentation), or
// image and caption embeddings (retrieval). d needs its targets only.
func MetricsOf(task Task, d *Data, pred [][]float32, outputs int) (map[string]float64, error) {
	if len(pred) == 0 {
		return nil, fmt.Errorf("no predictions")
	}
	want := outputs
	switch task {
	case Segmentation:
		want = d.pixels() * outputs
	case Retrieval:
		want = len(pred[0])
	}
	for i, p := range pred {
		if len(p) != want {
			return nil, fmt.Errorf("prediction %d has %d values, want %d", i, len(p), want)
		}
	}
	return metrics(task, d, pred, outputs)
}

// EpisodeMetricsOf computes the few-shot metrics from the ensemble's
// query probabilities per evaluation setting (EvalShots' order; per
// episode ways*queries rows of ways).
func EpisodeMetricsOf(h HeadSpec, probs [][][]float32) map[string]float64 {
	ways, _, queries := h.episodeShape()
	out := map[string]float64{}
	var accSum, lossSum float64
	for i, k := range EvalShots(h) {
		acc, loss := episodeScores(probs[i], ways, queries)
		out[fmt.Sprintf("acc1_%dshot", k)] = acc
		accSum += acc
		lossSum += loss
	}
	n := float64(len(probs))
	out["acc1"], out["loss"] = accSum/n, lossSum/n
	return out
}

// SegmentationScores accumulates the segmentation metrics of d's
// examples one at a time, in order, from each pixel's predicted class and
// predicted probability of its true class: a split's predictions need
// not be held at once (the torch runtime's are read from a mapped file).
type SegmentationScores struct {
	d       *Data
	classes int
	c       *segConfusion
	y       []int64
	next    int
}

// NewSegmentationScores starts the metrics of d's examples.
func NewSegmentationScores(d *Data, classes int) *SegmentationScores {
	return &SegmentationScores{d: d, classes: classes, c: newSegConfusion(classes)}
}

// Pixels is the number of pixels of one example.
func (s *SegmentationScores) Pixels() int { return s.d.pixels() }

// Examples is the number of examples with masks (d may hold its targets
// only, as the torch runtime's test split does).
func (s *SegmentationScores) Examples() int { return s.d.labelledPixels() / max(s.d.pixels(), 1) }

// Add scores the next example from its pixels' predicted classes and
// predicted probabilities of their true classes.
func (s *SegmentationScores) Add(best []int32, py []float32) error {
	return s.AddWithSums(best, py, nil)
}

// AddWithSums is Add with each class's predicted probabilities summed
// over the example's pixels (psum, nil where not known), from which the
// soft Dice score is computed.
func (s *SegmentationScores) AddWithSums(best []int32, py []float32, psum []float64) error {
	k := s.next
	if k >= s.Examples() {
		return fmt.Errorf("predictions for %d examples, the split has %d", k+1, s.Examples())
	}
	if p := s.d.pixels(); len(best) != p || len(py) != p {
		return fmt.Errorf("example %d: %d predicted pixels and %d probabilities for %d pixels", k, len(best), len(py), p)
	}
	for i, b := range best {
		if b < 0 || int(b) >= s.classes {
			return fmt.Errorf("example %d, pixel %d: predicted class %d of %d", k, i, b, s.classes)
		}
	}
	var err error
	if s.y, err = s.d.mask(k, s.y); err != nil {
		return err
	}
	s.c.add(s.y, best, py)
	if psum != nil {
		s.c.addSoftDice(s.y, py, psum)
	}
	s.next++
	return nil
}

// Metrics are the scores once every example was added.
func (s *SegmentationScores) Metrics() (map[string]float64, error) {
	if s.next != s.Examples() {
		return nil, fmt.Errorf("predictions for %d of %d examples", s.next, s.Examples())
	}
	return s.c.scores(), nil
}
