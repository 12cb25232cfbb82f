package transfer

import (
	"fmt"
	"slices"
)

// Judgement is how well one set of scores ranks models by their
// fine-tuned accuracy.
type Judgement struct {
	WeightedTau float64 `json:"weighted_tau"`
	KendallTau  float64 `json:"kendall_tau"`
	Pearson     float64 `json:"pearson"`
	Spearman    float64 `json:"spearman"`
	TopHit      bool    `json:"top1_hit"`
	Fidelity    float64 `json:"fidelity"`
}

// Judge compares scores with accuracies (one per model, same order).
func Judge(score, acc []float64) Judgement {
	return Judgement{
		WeightedTau: WeightedTau(score, acc), KendallTau: KendallTau(score, acc),
		Pearson: Pearson(score, acc), Spearman: Spearman(score, acc),
		TopHit: TopHit(score, acc), Fidelity: Fidelity(score, acc),
	}
}

// MetricNames lists the transferability metrics by the names blocks use.
// LEEP and NCE read a source model's class probabilities; the others read
// features.
var MetricNames = []string{"logme", "leep", "nce", "nleep", "hscore", "transrate", "gbc", "sfda"}

// NeedsSource reports whether a metric reads source-model probabilities.
func NeedsSource(metric string) bool { return metric == "leep" || metric == "nce" }

// Score computes the named metric. theta (N x z, may be nil unless the
// metric needs it) are the source model's probabilities on f's examples;
// seed fixes N-LEEP's mixture initialisation.
func Score(metric string, f Features, theta []float64, z int, seed uint64) (float64, error) {
	if NeedsSource(metric) && len(theta) != f.N*z {
		return 0, fmt.Errorf("%s needs the source model's probabilities for the %d examples", metric, f.N)
	}
	switch metric {
	case "logme":
		return LogME(f)
	case "leep":
		return LEEP(theta, z, f.Y, f.C)
	case "nce":
		return NCE(theta, z, f.Y, f.C)
	case "nleep":
		return NLEEP(f, seed)
	case "hscore":
		return HScore(f)
	case "transrate":
		return TransRate(f)
	case "gbc":
		return GBC(f)
	case "sfda":
		return SFDA(f)
	}
	return 0, fmt.Errorf("no transferability metric %q; the metrics are %v", metric, MetricNames)
}

// ValidMetric reports whether name is a metric.
func ValidMetric(name string) bool { return slices.Contains(MetricNames, name) }
