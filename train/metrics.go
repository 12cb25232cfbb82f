package train

// Evaluation metrics per task, and their names in the GATE results matrix.

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

// metrics computes a task's metrics from predictions (ensemble averages;
// regression values already in target units).
func metrics(task Task, d *Data, pred [][]float32, outputs int) (map[string]float64, error) {
	switch task {
	case Segmentation:
		return segmentationMetrics(d, pred, outputs)
	case Retrieval:
		return retrievalMetrics(d, pred), nil
	case MultiLabel:
		return multiLabelMetrics(d, pred), nil
	case Regression, VideoRegression:
		return regressionMetrics(d, pred), nil
	default:
		return classificationMetrics(d, pred), nil
	}
}

func classificationMetrics(d *Data, probs [][]float32) map[string]float64 {
	var acc1, acc5, loss float64
	for i, p := range probs {
		y := int(d.Y[i])
		rank := 0
		for c := range p {
			if p[c] > p[y] {
				rank++
			}
		}
		if rank == 0 {
			acc1++
		}
		if rank < 5 {
			acc5++
		}
		loss -= math.Log(float64(p[y]) + 1e-7)
	}
	n := float64(len(probs))
	m := map[string]float64{"acc1": 100 * acc1 / n, "loss": loss / n}
	if d.task() == Relational {
		for k, v := range answerTypeAccuracy(d, probs) {
			m["acc1/"+k] = v
		}
	}
	// Top-5 accuracy says something only with more than 5 classes (it is
	// 100 otherwise).
	if len(probs) > 0 && len(probs[0]) > 5 {
		m["acc5"] = 100 * acc5 / n
	}
	return m
}

func regressionMetrics(d *Data, pred [][]float32) map[string]float64 {
	var mae, mse float64
	k := 0
	for i, p := range pred {
		for j, v := range p {
			e := float64(v) - float64(d.T[i*len(p)+j])
			mae += math.Abs(e)
			mse += e * e
			k++
		}
	}
	return map[string]float64{"mae": mae / float64(k), "mse": mse / float64(k), "loss": mse / float64(k)}
}

// multiLabelMetrics: macro average precision and ROC-AUC over labels with
// at least one positive and one negative (in %, as the paper prints), the
// Brier score, the binary cross-entropy, and per label "aps/<j>",
// "auc/<j>" and "bs/<j>".
func multiLabelMetrics(d *Data, prob [][]float32) map[string]float64 {
	out := map[string]float64{}
	if len(prob) == 0 {
		return out
	}
	labels := len(prob[0])
	var apSum, aucSum, brier, bce float64
	counted := 0
	for j := 0; j < labels; j++ {
		scores := make([]float64, len(prob))
		truth := make([]bool, len(prob))
		var bs float64
		for i := range prob {
			p := float64(prob[i][j])
			y := float64(d.T[i*labels+j])
			scores[i], truth[i] = p, y > 0.5
			bs += (p - y) * (p - y)
			p = math.Min(math.Max(p, 1e-7), 1-1e-7)
			bce -= y*math.Log(p) + (1-y)*math.Log(1-p)
		}
		brier += bs
		out[fmt.Sprintf("bs/%d", j)] = bs / float64(len(prob))
		ap, auc, ok := averagePrecision(scores, truth)
		if ok {
			apSum += ap
			aucSum += auc
			counted++
			out[fmt.Sprintf("aps/%d", j)] = 100 * ap
			out[fmt.Sprintf("auc/%d", j)] = 100 * auc
		}
	}
	n := float64(len(prob) * labels)
	out["brier"], out["loss"] = brier/n, bce/n
	if counted > 0 {
		out["aps"], out["auc"] = 100*apSum/float64(counted), 100*aucSum/float64(counted)
	}
	return out
}

// averagePrecision returns the average precision (sklearn's definition:
// precision at each positive, ranked by score, ties broken by order) and
// the ROC-AUC (Mann-Whitney with tied scores counted half); ok is false
// when the labels are all one class.
func averagePrecision(scores []float64, truth []bool) (ap, auc float64, ok bool) {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	pos := 0
	for _, t := range truth {
		if t {
			pos++
		}
	}
	neg := len(truth) - pos
	if pos == 0 || neg == 0 {
		return 0, 0, false
	}
	// AP over groups of tied scores, as sklearn does.
	tp, fp := 0, 0
	prevRecall := 0.0
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			if truth[idx[j]] {
				tp++
			} else {
				fp++
			}
			j++
		}
		recall := float64(tp) / float64(pos)
		ap += (recall - prevRecall) * float64(tp) / float64(tp+fp)
		prevRecall = recall
		i = j
	}
	// AUC: for each positive, the negatives ranked below it (ties half).
	var wins float64
	negBelow := 0
	for i := len(idx) - 1; i >= 0; {
		j := i
		tiedPos, tiedNeg := 0, 0
		for j >= 0 && scores[idx[j]] == scores[idx[i]] {
			if truth[idx[j]] {
				tiedPos++
			} else {
				tiedNeg++
			}
			j--
		}
		wins += float64(tiedPos) * (float64(negBelow) + 0.5*float64(tiedNeg))
		negBelow += tiedNeg
		i = j
	}
	return ap, wins / float64(pos*neg), true
}

// selectionScore is the validation number checkpoints are ranked by,
// higher is better: accuracy, macro AP, or minus the MAE.
func selectionScore(task Task, m map[string]float64) float64 {
	switch task {
	case MultiLabel:
		return m["aps"]
	case Regression, VideoRegression:
		return -m["mae"]
	case Segmentation:
		return m["miou"]
	case Retrieval:
		return (m["i2t_acc1"] + m["t2i_acc1"]) / 2
	default:
		return m["acc1"]
	}
}

// Metric is a named result with its direction.
type Metric struct {
	Name           string
	Value          float64
	HigherIsBetter bool
}

// PaperMetrics names a task's metrics as the GATE results matrix does
// (Acc@1, APS Macro, "0 AUC", MAE Score...).
func PaperMetrics(task Task, m map[string]float64) []Metric {
	var out []Metric
	add := func(name, key string, higher bool) {
		if v, ok := m[key]; ok {
			out = append(out, Metric{name, v, higher})
		}
	}
	switch task {
	case MultiLabel:
		add("APS Macro", "aps", true)
		add("AUC Macro", "auc", true)
		add("BS Macro", "brier", false)
		add("Loss", "loss", false)
		for j := 0; ; j++ {
			if _, ok := m[fmt.Sprintf("bs/%d", j)]; !ok {
				break
			}
			add(fmt.Sprintf("%d APS", j), fmt.Sprintf("aps/%d", j), true)
			add(fmt.Sprintf("%d AUC", j), fmt.Sprintf("auc/%d", j), true)
			add(fmt.Sprintf("%d BS", j), fmt.Sprintf("bs/%d", j), false)
		}
	case Regression, VideoRegression:
		add("MAE Score", "mae", false)
		add("MSE Loss", "mse", false)
	case Segmentation:
		// The matrix's mIoU and Dice Score are GATE's: mIoU ignoring
		// label 0, in %; Dice the soft Dice score, a fraction (SPEC §5.9).
		if _, ok := m["miou_gate"]; ok {
			add("mIoU", "miou_gate", true)
			add("mIoU (all classes)", "miou", true)
		} else {
			add("mIoU", "miou", true)
		}
		add("Mean Acc@", "mean_acc", true)
		add("Overall Acc@", "overall_acc", true)
		add("Dice Score", "soft_dice", true)
		add("Dice %", "dice", true)
		add("CE Loss", "loss", false)
	case Retrieval:
		// The matrix's accuracies are GATE's in-batch (64) ones; the
		// whole split's ranking is kept beside them.
		if _, ok := m["i2t_inbatch_acc1"]; ok {
			add("Img2Txt Acc@1", "i2t_inbatch_acc1", true)
			add("Img2Txt Acc@5", "i2t_inbatch_acc5", true)
			add("Img2Txt Loss", "i2t_loss", false)
			add("Txt2Img Acc@1", "t2i_inbatch_acc1", true)
			add("Txt2Img Acc@5", "t2i_inbatch_acc5", true)
			add("Txt2Img Loss", "t2i_loss", false)
			add("Img2Txt Acc@1 (whole split)", "i2t_acc1", true)
			add("Img2Txt Acc@5 (whole split)", "i2t_acc5", true)
			add("Txt2Img Acc@1 (whole split)", "t2i_acc1", true)
			add("Txt2Img Acc@5 (whole split)", "t2i_acc5", true)
		} else if _, ok := m["i2t_blocks_acc1"]; ok {
			// Winoground under D4: the matrix's accuracies are GATE's
			// misplaced 2 x 2 blocks (gateBlockAccuracies); each item's
			// own are kept beside them.
			add("Img2Txt Acc@1", "i2t_blocks_acc1", true)
			add("Img2Txt Loss", "i2t_loss", false)
			add("Txt2Img Acc@1", "t2i_blocks_acc1", true)
			add("Txt2Img Loss", "t2i_loss", false)
			add("Img2Txt Acc@1 (per item)", "i2t_acc1", true)
			add("Txt2Img Acc@1 (per item)", "t2i_acc1", true)
		} else {
			add("Img2Txt Acc@1", "i2t_acc1", true)
			add("Img2Txt Acc@5", "i2t_acc5", true)
			add("Img2Txt Loss", "i2t_loss", false)
			add("Txt2Img Acc@1", "t2i_acc1", true)
			add("Txt2Img Acc@5", "t2i_acc5", true)
			add("Txt2Img Loss", "t2i_loss", false)
		}
		add("Text Score", "text_score", true)
		add("Image Score", "image_score", true)
		add("Group Score", "group_score", true)
	default:
		add("Acc@1", "acc1", true)
		add("Acc@5", "acc5", true)
		add("Loss", "loss", false)
		for _, t := range answerTypes {
			add(t+" Acc@1", "acc1/"+t, true)
		}
	}
	return out
}

// answerTypes are CLEVR's question types as GATE's matrix names their
// accuracies ("Colour Acc@1", ...), in its order.
var answerTypes = []string{"Colour", "Count", "Material", "Shape", "Size", "Yes/No"}

// clevrAnswerType is the question type of each of CLEVR's 28 answers:
// its answer spaces do not overlap, so an answer says what was asked.
var clevrAnswerType = func() map[string]string {
	m := map[string]string{"rubber": "Material", "metal": "Material", "cube": "Shape", "sphere": "Shape", "cylinder": "Shape",
		"large": "Size", "small": "Size", "yes": "Yes/No", "no": "Yes/No"}
	for _, c := range []string{"gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"} {
		m[c] = "Colour"
	}
	for i := 0; i <= 10; i++ {
		m[strconv.Itoa(i)] = "Count"
	}
	return m
}()

// answerTypeAccuracy is top-1 accuracy per question type over the
// examples whose true answer has that type, when every class is one of
// CLEVR's answers (nil otherwise: another VQA set).
func answerTypeAccuracy(d *Data, probs [][]float32) map[string]float64 {
	if len(d.ClassNames) == 0 {
		return nil
	}
	types := make([]string, len(d.ClassNames))
	for c, name := range d.ClassNames {
		t, ok := clevrAnswerType[name]
		if !ok {
			return nil
		}
		types[c] = t
	}
	right, total := map[string]float64{}, map[string]float64{}
	for i, p := range probs {
		y := int(d.Y[i])
		t := types[y]
		total[t]++
		if p[y] >= slices.Max(p) { // top-1 as acc1 counts it: no class scored higher
			right[t]++
		}
	}
	out := map[string]float64{}
	for t, n := range total {
		out[t] = 100 * right[t] / n
	}
	return out
}

// argmax is the index of row's largest value, the first among ties.
func argmax(row []float32) int {
	best := 0
	for k := range row {
		if row[k] > row[best] {
			best = k
		}
	}
	return best
}
