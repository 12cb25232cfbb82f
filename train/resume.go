package train

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// State is everything a training run needs to go on after Iteration as
// if it had never stopped: parameters and batch-norm buffers, AdamW's
// moments and step, the plateau scheduler, the sampler's random state and
// the top-k parameter sets kept so far.
type State struct {
	Iteration int
	LR        float64
	// Best and Bad are the plateau scheduler's best validation loss and
	// count of validations without improvement.
	Best float64
	Bad  int
	// AdamStep is AdamW's step count (its bias correction).
	AdamStep int
	// RNG is the training sampler's PCG state (MarshalBinary).
	RNG []byte
	// Values are the parameters and buffers; AdamM and AdamV the
	// optimiser's moments of the trained parameters.
	Values, AdamM, AdamV map[string][]float32
	// Kept are the top-k parameter sets so far, best first.
	Kept []Checkpoint
}

// Resume asks Train to save its State every Every iterations (through
// Save) and, with From, to start from a saved one. When Due is set it
// decides instead, per iteration, whether to save.
// Refused hears why From cannot continue this run (the run then starts
// over); Resumed that it did.
type Resume struct {
	Every   int
	Due     func(iteration int) bool
	Save    func(*State) error
	From    *State
	Refused func(error)
	Resumed func(iteration, total int)
}

func (r Resume) due(it, total int) bool {
	if r.Save == nil || it >= total {
		return false
	}
	if r.Due != nil {
		return r.Due(it)
	}
	return r.Every > 0 && it%r.Every == 0
}

// stateMeta is the scalar part of a State, kept in the file's metadata.
type stateMeta struct {
	Iteration int       `json:"iteration"`
	LR        float64   `json:"lr"`
	Best      string    `json:"best"` // may be +Inf
	Bad       int       `json:"bad"`
	AdamStep  int       `json:"adam_step"`
	RNG       string    `json:"rng"`
	KeptIters []int     `json:"kept_iterations"`
	KeptScore []float64 `json:"kept_scores"`
}

// WriteStateFile writes s to path (through a temporary file and a
// rename, so a kill mid-write leaves the previous file whole), with meta
// beside it (the action ID it belongs to).
func WriteStateFile(path string, s *State, meta map[string]string) error {
	sm := stateMeta{Iteration: s.Iteration, LR: s.LR, Best: fmt.Sprint(s.Best), Bad: s.Bad, AdamStep: s.AdamStep,
		RNG: base64.StdEncoding.EncodeToString(s.RNG)}
	var ts []safetensors.Tensor
	add := func(prefix string, vals map[string][]float32) {
		for _, name := range sortedKeys(vals) {
			ts = append(ts, safetensors.F32Tensor(prefix+name, []int{len(vals[name])}, vals[name]))
		}
	}
	add("value/", s.Values)
	add("adam_m/", s.AdamM)
	add("adam_v/", s.AdamV)
	for i, c := range s.Kept {
		sm.KeptIters = append(sm.KeptIters, c.Iteration)
		sm.KeptScore = append(sm.KeptScore, c.ValScore)
		add(fmt.Sprintf("kept%d/", i), c.Values)
	}
	js, err := json.Marshal(sm)
	if err != nil {
		return err
	}
	md := map[string]string{"gatepipe_train_state": string(js)}
	for k, v := range meta {
		md[k] = v
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := safetensors.Write(tmp, ts, md); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadStateFile reads a State written by WriteStateFile and its metadata.
func ReadStateFile(path string) (*State, map[string]string, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	raw, ok := f.Metadata["gatepipe_train_state"]
	if !ok {
		return nil, f.Metadata, fmt.Errorf("%s: not a gatepipe training checkpoint", path)
	}
	var sm stateMeta
	if err := json.Unmarshal([]byte(raw), &sm); err != nil {
		return nil, f.Metadata, fmt.Errorf("%s: training state: %w", path, err)
	}
	s := &State{Iteration: sm.Iteration, LR: sm.LR, Bad: sm.Bad, AdamStep: sm.AdamStep,
		Values: map[string][]float32{}, AdamM: map[string][]float32{}, AdamV: map[string][]float32{}}
	if s.Best, err = parseFloat(sm.Best); err != nil {
		return nil, f.Metadata, fmt.Errorf("%s: best loss: %w", path, err)
	}
	if s.RNG, err = base64.StdEncoding.DecodeString(sm.RNG); err != nil {
		return nil, f.Metadata, fmt.Errorf("%s: random state: %w", path, err)
	}
	if len(sm.KeptIters) != len(sm.KeptScore) {
		return nil, f.Metadata, fmt.Errorf("%s: %d kept iterations but %d scores", path, len(sm.KeptIters), len(sm.KeptScore))
	}
	kept := make([]map[string][]float32, len(sm.KeptIters))
	for i := range kept {
		kept[i] = map[string][]float32{}
	}
	for name, t := range f.Tensors {
		if t.DType != safetensors.F32 {
			return nil, f.Metadata, fmt.Errorf("%s: tensor %s is %s, not F32", path, name, t.DType)
		}
		prefix, param, _ := strings.Cut(name, "/")
		var dst map[string][]float32
		switch prefix {
		case "value":
			dst = s.Values
		case "adam_m":
			dst = s.AdamM
		case "adam_v":
			dst = s.AdamV
		default:
			var i int
			if _, err := fmt.Sscanf(prefix, "kept%d", &i); err != nil || i < 0 || i >= len(kept) {
				return nil, f.Metadata, fmt.Errorf("%s: unexpected tensor %s", path, name)
			}
			dst = kept[i]
		}
		dst[param] = t.Float32s()
	}
	for i := range kept {
		s.Kept = append(s.Kept, Checkpoint{Iteration: sm.KeptIters[i], ValScore: sm.KeptScore[i], Values: kept[i]})
	}
	return s, f.Metadata, nil
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	var f float64
	_, err := fmt.Sscan(s, &f)
	return f, err
}

func sortedKeys(m map[string][]float32) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fits reports why s cannot continue the run whose model m and optimiser
// opt are given (a parameter missing or of another size), or nil.
func (s *State) fits(m *model, opt *adamW, iterations int) error {
	if s.Iteration < 1 || s.Iteration >= iterations {
		return fmt.Errorf("iteration %d is not within the run's %d", s.Iteration, iterations)
	}
	want := m.values()
	check := func(what string, got map[string][]float32, want map[string]int) error {
		if len(got) != len(want) {
			return fmt.Errorf("%s: %d tensors, the model has %d", what, len(got), len(want))
		}
		for name, n := range want {
			if len(got[name]) != n {
				return fmt.Errorf("%s %s: %d values, the model has %d", what, name, len(got[name]), n)
			}
		}
		return nil
	}
	sizes := map[string]int{}
	for k, v := range want {
		sizes[k] = len(v)
	}
	if err := check("values", s.Values, sizes); err != nil {
		return err
	}
	for i, c := range s.Kept {
		if err := check(fmt.Sprintf("kept set %d", i), c.Values, sizes); err != nil {
			return err
		}
	}
	learned := map[string]int{}
	for name, v := range opt.mom {
		learned[name] = len(v)
	}
	if err := check("optimiser moments", s.AdamM, learned); err != nil {
		return err
	}
	if err := check("optimiser moments", s.AdamV, learned); err != nil {
		return err
	}
	return new(rand.PCG).UnmarshalBinary(s.RNG)
}

// restore puts s into the model, the optimiser and the sampler.
func (s *State) restore(m *model, opt *adamW, src *rand.PCG) error {
	for _, p := range m.params {
		copy(p.node.Value().Data().([]float32), s.Values[p.name])
	}
	for k, v := range m.buffers {
		copy(v, s.Values[k])
	}
	for name := range opt.mom {
		copy(opt.mom[name], s.AdamM[name])
		copy(opt.v[name], s.AdamV[name])
	}
	opt.t = s.AdamStep
	return src.UnmarshalBinary(s.RNG)
}

// capture records the run's state after iteration it.
func capture(it int, m *model, opt *adamW, src *rand.PCG, lr, best float64, bad int, kept []Checkpoint) (*State, error) {
	rng, err := src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	s := &State{Iteration: it, LR: lr, Best: best, Bad: bad, AdamStep: opt.t, RNG: rng, Values: m.values(),
		AdamM: map[string][]float32{}, AdamV: map[string][]float32{}, Kept: kept}
	for name := range opt.mom {
		s.AdamM[name] = append([]float32(nil), opt.mom[name]...)
		s.AdamV[name] = append([]float32(nil), opt.v[name]...)
	}
	return s, nil
}
