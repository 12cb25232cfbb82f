package probe

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Metric scores predictions: scores is N x C (higher means more likely),
// y the true classes. Every metric is in percent, higher is better.
type Metric func(scores []float64, classes int, y []int) float64

// Metrics is the registry of the probe metrics, by the names blocks use.
var Metrics = map[string]Metric{
	"accuracy":       Accuracy,
	"mean_per_class": MeanPerClass,
	"map11":          MAP11,
	"roc_auc":        ROCAUC,
}

// MetricNames lists the registry's names, sorted.
func MetricNames() []string {
	names := make([]string, 0, len(Metrics))
	for k := range Metrics {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// LookupMetric returns the named metric or an error listing the names.
func LookupMetric(name string) (Metric, error) {
	if m, ok := Metrics[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("no metric %q; the metrics are %v", name, MetricNames())
}

func argmax(row []float64) int {
	best := 0
	for k, v := range row {
		if v > row[best] || math.IsNaN(row[best]) && !math.IsNaN(v) {
			best = k
		}
	}
	return best
}

// Accuracy is top-1 accuracy.
func Accuracy(scores []float64, classes int, y []int) float64 {
	if len(y) == 0 {
		return 0
	}
	var right int
	for i, c := range y {
		if argmax(scores[i*classes:(i+1)*classes]) == c {
			right++
		}
	}
	return 100 * float64(right) / float64(len(y))
}

// MeanPerClass is the mean over the classes present of each class's
// recall: mean_c CM[c][c] / sum_k CM[c][k].
func MeanPerClass(scores []float64, classes int, y []int) float64 {
	right := make([]float64, classes)
	total := make([]float64, classes)
	for i, c := range y {
		total[c]++
		if argmax(scores[i*classes:(i+1)*classes]) == c {
			right[c]++
		}
	}
	var sum float64
	var present int
	for c := range classes {
		if total[c] > 0 {
			sum += right[c] / total[c]
			present++
		}
	}
	if present == 0 {
		return 0
	}
	return 100 * sum / float64(present)
}

// MAP11 is the 11-point interpolated average precision (PASCAL VOC 2007),
// one-vs-rest per class on the class's score column, averaged over the
// classes with a positive example: AP = 1/11 sum over t in {0, 0.1, ...,
// 1} of the highest precision at a recall of at least t.
func MAP11(scores []float64, classes int, y []int) float64 {
	n := len(y)
	order := make([]int, n)
	var sum float64
	var counted int
	for c := range classes {
		var positives int
		for _, t := range y {
			if t == c {
				positives++
			}
		}
		if positives == 0 {
			continue
		}
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return scores[order[a]*classes+c] > scores[order[b]*classes+c] })
		prec := make([]float64, n)
		rec := make([]float64, n)
		var tp int
		for k, i := range order {
			if y[i] == c {
				tp++
			}
			prec[k] = float64(tp) / float64(k+1)
			rec[k] = float64(tp) / float64(positives)
		}
		var ap float64
		for t := 0; t <= 10; t++ {
			var p float64
			for k := range n {
				if rec[k] >= float64(t)/10-1e-12 {
					p = max(p, prec[k])
				}
			}
			ap += p / 11
		}
		sum += ap
		counted++
	}
	if counted == 0 {
		return 0
	}
	return 100 * sum / float64(counted)
}

// ROCAUC is the area under the ROC curve (ties count half): for two
// classes, of class 1's score; for more, the mean of the one-vs-rest
// areas over the classes with both positives and negatives.
func ROCAUC(scores []float64, classes int, y []int) float64 {
	auc := func(c int) (float64, bool) {
		type pt struct {
			s   float64
			pos bool
		}
		pts := make([]pt, len(y))
		var pos, neg float64
		for i, t := range y {
			pts[i] = pt{scores[i*classes+c], t == c}
			if t == c {
				pos++
			} else {
				neg++
			}
		}
		if pos == 0 || neg == 0 {
			return 0, false
		}
		sort.Slice(pts, func(a, b int) bool { return pts[a].s < pts[b].s })
		// Mann-Whitney U from mid-ranks.
		var rankSum float64
		for i := 0; i < len(pts); {
			j := i
			for j < len(pts) && pts[j].s == pts[i].s {
				j++
			}
			mid := float64(i+j+1) / 2
			for k := i; k < j; k++ {
				if pts[k].pos {
					rankSum += mid
				}
			}
			i = j
		}
		return (rankSum - pos*(pos+1)/2) / (pos * neg), true
	}
	if classes == 2 {
		a, _ := auc(1)
		return 100 * a
	}
	var sum float64
	var counted int
	for c := range classes {
		if a, ok := auc(c); ok {
			sum += a
			counted++
		}
	}
	if counted == 0 {
		return 0
	}
	return 100 * sum / float64(counted)
}
