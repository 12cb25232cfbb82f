package trainnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gatepipe/gatepipe/formats/runmeta"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/command"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/train"
	"github.com/zclconf/go-cty/cty"
)

// seedDir names a seed's directory inside a train block's output.
func seedDir(seed uint64) string { return fmt.Sprintf("seed-%d", seed) }

// runSeeds trains once per seed of the recipe's seeds. Each seed's run is
// a part of the cache keyed by everything that determines it (partKey),
// not by the list of seeds: adding seeds 3 and 4 to [0, 1, 2] trains
// two. The block's output holds each seed's directory (seed-0/...), and
// at its top a metrics.json of means with std and n, the first seed's
// log.jsonl (its curves) and a run.json that lists the seeds.
func (n *Node) runSeeds(ctx context.Context, env *nodes.Env, d *loaded) (cty.Value, error) {
	var (
		runs        []command.Metrics
		checkpoints []string
		acc1s       []float64
		infos       []runmeta.Info
	)
	for i, seed := range n.seeds {
		dst := filepath.Join(env.OutDir, seedDir(seed))
		r, reused, err := n.seedRun(ctx, env, d, i, seed, dst)
		if err != nil {
			return cty.NilVal, fmt.Errorf("seed %d: %w", seed, err)
		}
		if reused {
			env.Log.Info().Uint64("seed", seed).Msg("seed already trained: reused from the cache")
		}
		runs = append(runs, r.metrics)
		infos = append(infos, r.info)
		if r.acc1 != nil {
			acc1s = append(acc1s, *r.acc1)
		}
		for _, c := range r.checkpoints {
			checkpoints = append(checkpoints, filepath.Join(dst, filepath.Base(c)))
		}
	}
	agg, err := command.AggregateSeeds(runs, n.seeds)
	if err != nil {
		return cty.NilVal, err
	}
	if err := writeMetrics(env.OutDir, agg); err != nil {
		return cty.NilVal, err
	}
	first := filepath.Join(env.OutDir, seedDir(n.seeds[0]))
	if err := sources.CopyFile(filepath.Join(first, command.TrainerLogFile), filepath.Join(env.OutDir, command.TrainerLogFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cty.NilVal, err
	}
	if err := command.WriteRunInfo(env, seedsInfo(infos, n.seeds)); err != nil {
		return cty.NilVal, err
	}
	var acc1 *float64
	if len(acc1s) == len(n.seeds) {
		mean, _ := command.MeanStd(acc1s)
		acc1 = &mean
	}
	return n.value(env.OutDir, agg, checkpoints, acc1), nil
}

// seedInfo is the run metadata of a run over seeds: the seeds, the first
// seed's start, the summed time and energy, the mean throughput and the
// largest peak memory.
func seedsInfo(infos []runmeta.Info, seeds []uint64) runmeta.Info {
	out := runmeta.Info{Seeds: seeds, Started: infos[0].Started, Iterations: infos[0].Iterations, BLAS: infos[0].BLAS}
	var energy float64
	haveEnergy := true
	for _, in := range infos {
		out.Seconds += in.Seconds
		out.ImagesPerSec += in.ImagesPerSec / float64(len(infos))
		out.PeakRSSBytes = max(out.PeakRSSBytes, in.PeakRSSBytes)
		if in.EnergyJ == nil {
			haveEnergy = false
		} else {
			energy += *in.EnergyJ
		}
	}
	if haveEnergy {
		out.EnergyJ = &energy
	}
	return out
}

// seedRun gives seed's run in dst: from the cache's parts when it was
// trained before (by this or an earlier list of seeds), else trained now
// and stored as a part. Seed index i of the list only labels progress.
func (n *Node) seedRun(ctx context.Context, env *nodes.Env, d *loaded, i int, seed uint64, dst string) (*trained, bool, error) {
	key, err := n.partKey(ctx, env, seed)
	if err != nil {
		return nil, false, err
	}
	if env.Parts != nil {
		if dir, ok := env.Parts.Part(key); ok {
			r, err := readTrained(dir, d.task)
			if err == nil {
				return r, true, copyTree(dir, dst)
			}
			env.Log.Warn().Err(err).Uint64("seed", seed).Msg("the cached run of this seed is unreadable; training it again")
		}
	}
	work := dst
	if env.Parts != nil {
		// Trained beside the output, then moved into the cache as a part.
		if work, err = os.MkdirTemp(filepath.Dir(env.OutDir), "seed-"); err != nil {
			return nil, false, err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o777); err != nil {
		return nil, false, err
	}
	sub := *env
	sub.OutDir, sub.ActionID = work, key
	sub.Log = env.Log.With().Uint64("seed", seed).Logger()
	sub.Progress = seedProgress{p: env.Progress, label: fmt.Sprintf("seed %d (%d of %d) · ", seed, i+1, len(n.seeds))}
	if env.ResumeDir != "" {
		sub.ResumeDir = filepath.Join(env.ResumeDir, seedDir(seed))
		if err := os.MkdirAll(sub.ResumeDir, 0o777); err != nil {
			return nil, false, err
		}
	}
	recipe := n.recipe
	recipe.Seed = seed
	r, err := n.trainOne(ctx, &sub, d, recipe)
	if err != nil {
		return nil, false, err
	}
	if env.Parts == nil {
		return r, false, nil
	}
	dir, err := env.Parts.StorePart(key, fmt.Sprintf("%s seed %d", env.Addr, seed), work)
	if err != nil {
		return nil, false, err
	}
	return r, false, copyTree(dir, dst)
}

// readTrained reads a stored seed's run back: its metrics, checkpoints
// and run metadata.
func readTrained(dir string, task train.Task) (*trained, error) {
	m, err := command.ReadMetrics(filepath.Join(dir, command.MetricsFile))
	if err != nil {
		return nil, err
	}
	info, ok, err := runmeta.Read(dir)
	if err != nil || !ok {
		return nil, fmt.Errorf("%s: no readable %s", dir, runmeta.File)
	}
	r := &trained{metrics: *m, info: info}
	if v, ok := m.Metrics["Acc@1"]; ok && task == train.Classification {
		r.acc1 = new(v.Value)
	}
	r.checkpoints, err = keptCheckpoints(dir)
	return r, err
}

// keptCheckpoints lists dir's checkpoint_<i>.safetensors files best
// first, by their number (a glob's name order puts checkpoint_10 before
// checkpoint_2).
func keptCheckpoints(dir string) ([]string, error) {
	var out []string
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("checkpoint_%d.safetensors", i))
		if _, err := os.Stat(p); err != nil {
			if os.IsNotExist(err) {
				return out, nil
			}
			return nil, err
		}
		out = append(out, p)
	}
}

// partKey identifies one seed's training by what determines it, as an
// action ID identifies a block's: the kind's version, the decoded
// configuration with this seed (the dataset's path names its content),
// the initial weights' content and their pinned downloads.
func (n *Node) partKey(ctx context.Context, env *nodes.Env, seed uint64) (string, error) {
	h := sha256.New()
	recipe := n.recipe
	recipe.Seed = seed
	cfg, err := json.Marshal(struct {
		Version, Model, Encoder, Benchmark, Category, Dataset string
		Task                                                  string
		Enc                                                   any
		Head                                                  any
		Recipe                                                any
		CheckpointEvery                                       *int
		Preprocess                                            any
		Protocol                                              any `json:",omitempty"`
	}{Kind{}.Version(), n.model, n.encName, n.benchmark, n.category, n.dataset, string(n.task), n.enc, n.enc.Head, recipe, n.checkpointEvery, n.preprocess, n.Protocol()})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "gatepipe train seed part\x00%s\n", cfg)
	if err := n.weights.Fingerprint(ctx, h); err != nil {
		return "", err
	}
	if err := writeWeightPins(ctx, h, env.Sources, n.weights.Downloads()); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeWeightPins hashes the pinned files of the weights' downloads.
func writeWeightPins(ctx context.Context, w io.Writer, r *sources.Resolver, refs []sources.Ref) error {
	for _, ref := range refs {
		if r == nil {
			fmt.Fprintf(w, "source %s unresolved\n", ref.Key())
			continue
		}
		pin, err := r.Resolve(ctx, ref, nil)
		if err != nil {
			return fmt.Errorf("weights %s: %w", ref.Key(), err)
		}
		for _, f := range pin.Files {
			fmt.Fprintf(w, "file %s %s\n", f.Path, f.SHA256)
		}
	}
	return nil
}

// seedProgress labels a seed's progress with the seed.
type seedProgress struct {
	p     nodes.Progress
	label string
}

func (s seedProgress) Update(done, total int64, unit string) { s.p.Update(done, total, s.label+unit) }

// copyTree copies src's files under dst. (Links would save nothing: the
// cache copies a linked file into an output of its own when it stores
// the block's output.)
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if de.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o777)
		}
		if !de.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		return sources.CopyFile(p, filepath.Join(dst, rel))
	})
}
