package trainnode

// GATE's few-shot episodes on the torch runtime: with a protocol card
// that has episodes, gatepipe draws GATE's variable episodes
// (train.GATEEpisodes) in place of its fixed ones, hands them to the
// worker in the draws file in a ragged layout, and scores the worker's
// test predictions per episode.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/protocol"
	"github.com/gatepipe/gatepipe/train"
)

const (
	// gateLayout is the job config's "episodes" with GATE's episodes.
	gateLayout = "gate"
	// gateTestFile holds the test episodes gatepipe drew, beside the
	// worker's outputs, for scoring its predictions.
	gateTestFile = "gate_test_episodes.safetensors"
	// gatePred is the worker's test predictions on GATE's episodes: F32
	// [sum over episodes of queries x classes], each episode's query
	// probabilities row-major, the episodes in order.
	gatePred = "gate_pred"
	// gateEvalSeed draws the validation and test episodes whatever the
	// recipe's seed: every run meets the same ones (GATE's are fixed too,
	// seeded by the episode's index).
	gateEvalSeed = 0
)

// gateEpisodes says whether the node trains on GATE's episodes.
func (n *Node) gateEpisodes() bool {
	return n.task == train.FewShot && n.card != nil && n.card.Episodes != nil
}

// episodeSpec is the card's episode sampling for split.
func episodeSpec(e *protocol.Episodes, split string) train.EpisodeSpec {
	return train.EpisodeSpec{Split: split, Ways: e.Ways, MinShots: train.GATEMinShots, MaxShots: e.MaxShots,
		SupportBudget: e.SupportBudget, MaxQueries: e.MaxQueries}
}

// gateEpisodeDraws draws GATE's episodes for the draws file: one training
// episode per iteration (from the recipe's seed), the card's validation
// and test episodes (from gateEvalSeed); the test episodes are also
// written to work's gateTestFile, which gateEpisodeMetrics reads.
func (n *Node) gateEpisodeDraws(tr, val, test *train.Data, iterations int, seed uint64, work string) ([]safetensors.Tensor, error) {
	e := n.card.Episodes
	var out []safetensors.Tensor
	for _, s := range []struct {
		name string
		d    *train.Data
		n    int
		seed uint64
	}{{"train", tr, iterations, seed}, {"val", val, e.Val, gateEvalSeed}, {"test", test, e.Test, gateEvalSeed}} {
		if s.n < 1 {
			return nil, fmt.Errorf("%s split: GATE's protocol card asks for %d episodes", s.name, s.n)
		}
		eps, err := train.GATEEpisodes(s.d, episodeSpec(e, s.name), s.n, s.seed)
		if err != nil {
			return nil, err
		}
		ts := raggedTensors("gate_"+s.name, eps)
		out = append(out, ts...)
		if s.name == "test" {
			if err := safetensors.WriteFile(filepath.Join(work, gateTestFile), ts, nil); err != nil {
				return nil, fmt.Errorf("GATE's test episodes: %w", err)
			}
		}
	}
	return out, nil
}

// raggedTensors lays episodes out for the worker: name_index I32 [rows]
// (the split's examples), name_label I32 [rows] (the class within the
// episode), name_query U8 [rows] (1: a query) and name_offsets I32
// [episodes+1] (episode e is rows offsets[e] to offsets[e+1]).
func raggedTensors(name string, eps []train.Episode) []safetensors.Tensor {
	var index, label []int32
	var query []byte
	offsets := []int32{0}
	for _, e := range eps {
		for j, r := range e.Index {
			index = append(index, int32(r))
			label = append(label, int32(e.Label[j]))
			q := byte(0)
			if e.Query[j] {
				q = 1
			}
			query = append(query, q)
		}
		offsets = append(offsets, int32(len(index)))
	}
	return []safetensors.Tensor{
		safetensors.I32Tensor(name+"_index", []int{len(index)}, index),
		safetensors.I32Tensor(name+"_label", []int{len(label)}, label),
		{Name: name + "_query", DType: safetensors.U8, Shape: []int{len(query)}, Data: query},
		safetensors.I32Tensor(name+"_offsets", []int{len(offsets)}, offsets),
	}
}

// raggedEpisodes reads episodes laid out by raggedTensors.
func raggedEpisodes(f *safetensors.File, name string) ([]train.Episode, error) {
	get := func(suffix string) (*safetensors.Tensor, error) {
		t := f.Tensors[name+suffix]
		if t == nil || len(t.Shape) != 1 || !t.DType.Integer() {
			return nil, fmt.Errorf("no 1-d integer tensor %s%s", name, suffix)
		}
		return t, nil
	}
	var ts [4]*safetensors.Tensor
	for i, s := range []string{"_index", "_label", "_query", "_offsets"} {
		var err error
		if ts[i], err = get(s); err != nil {
			return nil, err
		}
	}
	index, label, query, offsets := ts[0].Int64s(), ts[1].Int64s(), ts[2].Int64s(), ts[3].Int64s()
	if len(label) != len(index) || len(query) != len(index) || len(offsets) < 1 || offsets[0] != 0 || offsets[len(offsets)-1] != int64(len(index)) {
		return nil, fmt.Errorf("%s: %d rows, %d labels, %d query flags and offsets from %v to %v do not agree",
			name, len(index), len(label), len(query), offsets[:min(1, len(offsets))], offsets[max(len(offsets)-1, 0):])
	}
	eps := make([]train.Episode, len(offsets)-1)
	for e := range eps {
		a, b := offsets[e], offsets[e+1]
		if b < a {
			return nil, fmt.Errorf("%s: episode %d's offsets %d to %d run backwards", name, e, a, b)
		}
		ep := train.Episode{}
		for j := a; j < b; j++ {
			ep.Index = append(ep.Index, int(index[j]))
			ep.Label = append(ep.Label, int(label[j]))
			ep.Query = append(ep.Query, query[j] != 0)
		}
		ep.Ways = ep.Classes()
		eps[e] = ep
	}
	return eps, nil
}

// gateEpisodesDrawn says whether work holds GATE's test episodes: the
// worker ran on them.
func gateEpisodesDrawn(work string) bool {
	_, err := os.Stat(filepath.Join(work, gateTestFile))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// gateEpisodeMetrics scores the worker's test predictions (pred's
// gatePred) on the test episodes in work: Acc@1 and the loss as means
// over the episodes (train.GATEEpisodeMetrics).
func gateEpisodeMetrics(work string, pred *safetensors.File) (map[string]float64, error) {
	f, err := safetensors.ReadFile(filepath.Join(work, gateTestFile))
	if err != nil {
		return nil, fmt.Errorf("GATE's test episodes: %w", err)
	}
	eps, err := raggedEpisodes(f, "gate_test")
	if err != nil {
		return nil, fmt.Errorf("GATE's test episodes: %w", err)
	}
	p := pred.Tensors[gatePred]
	if p == nil || p.DType != safetensors.F32 {
		return nil, fmt.Errorf("pred.safetensors: no F32 tensor %s (the test episodes' query probabilities)", gatePred)
	}
	m, err := train.GATEEpisodeMetrics(eps, p.Float32s())
	if err != nil {
		return nil, fmt.Errorf("pred.safetensors %s: %w", gatePred, err)
	}
	return m, nil
}
