package search

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/eevee"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Report is search.json: everything the search found.
type Report struct {
	Matrix  string            `json:"matrix"`
	Models  int               `json:"models"`
	Columns int               `json:"columns"`
	Pool    []string          `json:"pool"`
	Options eevee.Options     `json:"options"`
	Search  searchSettings    `json:"search"`
	Single  []eevee.Candidate `json:"single,omitempty"`
	Results []eevee.KResult   `json:"results"`
	// Stability repeats the search under more scoring seeds.
	Stability []eevee.Stability `json:"stability,omitempty"`
}

type searchSettings struct {
	K           []int  `json:"k"`
	Initial     int    `json:"initial"`
	Winners     int    `json:"winners"`
	Children    int    `json:"children"`
	Generations int    `json:"generations"`
	Seed        uint64 `json:"seed"`
	Workers     int    `json:"workers"`
}

// Run performs the search on the node's CPU slots.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	m, err := n.LoadMatrix()
	if err != nil {
		return cty.NilVal, err
	}
	p, err := eevee.NewProblem(m, n.Opts)
	if err != nil {
		return cty.NilVal, err
	}
	if p.Warning != "" {
		env.Log.Warn().Msg(p.Warning)
	}
	workers := max(env.Devices.CPUs, 1)
	ev := p.NewEvaluator(workers)
	so := n.search
	so.Workers = workers
	so.Progress = n.progress(env, so)
	rep := Report{Matrix: filepath.Base(n.matrix), Models: len(m.Models), Columns: len(p.Matrix.Columns), Options: n.Opts,
		Search: searchSettings{K: so.K, Initial: so.Initial, Winners: so.Winners, Children: so.Children, Generations: so.Generations, Seed: so.Seed, Workers: workers}}
	for _, b := range p.Pool {
		rep.Pool = append(rep.Pool, p.Benchmarks[b])
	}
	if n.single {
		if rep.Single, err = p.SingleBenchmarks(ctx, ev); err != nil {
			return cty.NilVal, err
		}
		if err := writeSingle(filepath.Join(env.OutDir, "single.csv"), rep.Single); err != nil {
			return cty.NilVal, err
		}
	}
	if rep.Results, err = p.Search(ctx, ev, so); err != nil {
		return cty.NilVal, err
	}
	if len(n.seeds) > 0 {
		if rep.Stability, err = n.stability(ctx, m, so, workers, rep.Results); err != nil {
			return cty.NilVal, err
		}
		if err := writeStability(filepath.Join(env.OutDir, "stability.csv"), rep.Stability); err != nil {
			return cty.NilVal, err
		}
		for _, st := range rep.Stability {
			env.Log.Info().Int("k", st.K).Float64("agreement", st.Agreement).Strs("consensus", st.Consensus).Msg("selection stability over scoring seeds")
		}
	}
	return writeReport(env, rep)
}

// progress reports the search's progress in candidates: the initial
// population, then each generation's children (duplicates are looked up,
// not re-scored), for every k and scoring seed.
func (n *Node) progress(env *nodes.Env, so eevee.SearchOptions) func(eevee.GenerationStats) {
	perGen := int64(so.Winners * so.Children)
	total := int64(len(so.K)) * (int64(so.Initial) + int64(so.Generations)*perGen) * int64(max(len(n.seeds), 1))
	var done int64
	return func(st eevee.GenerationStats) {
		if st.Generation == 0 {
			done += int64(so.Initial)
		} else {
			done += perGen
		}
		env.Progress.Update(min(done, total), total, "candidates")
		env.Log.Info().Int("k", st.K).Int("generation", st.Generation).Float64("best", st.Best).
			Float64("median_top", st.Median).Int("scored", st.Scored).Str("rate", fmt.Sprintf("%.1f candidates/s", st.CandidatesPerSec)).Msg("eevee")
	}
}

// writeReport writes each k's results and tier, and search.json, and
// returns the block's value.
func writeReport(env *nodes.Env, rep Report) (cty.Value, error) {
	consensus := map[string]cty.Value{}
	for i, r := range rep.Results {
		names := r.Best().Benchmarks
		if rep.Stability != nil {
			names = rep.Stability[i].Consensus
		}
		var vals []cty.Value
		for _, b := range names {
			vals = append(vals, cty.StringVal(b))
		}
		consensus[strconv.Itoa(r.K)] = cty.ListVal(vals)
	}
	tiers, best, scores := map[string]cty.Value{}, map[string]cty.Value{}, map[string]cty.Value{}
	for _, r := range rep.Results {
		ks := strconv.Itoa(r.K)
		if sc := r.Best().Score; math.IsNaN(sc) || math.IsInf(sc, 0) {
			return cty.NilVal, fmt.Errorf("k = %d: every candidate's meta-model diverged (loss %g); the matrix may hold extreme values, or lr is too high", r.K, sc)
		}
		if err := writeK(env.OutDir, r); err != nil {
			return cty.NilVal, err
		}
		dir := filepath.Join(env.OutDir, "tiers", "k"+ks)
		if err := writeTier(dir, r, rep); err != nil {
			return cty.NilVal, err
		}
		tiers[ks] = cty.StringVal(dir)
		var names []cty.Value
		for _, b := range tierOrder(r) {
			names = append(names, cty.StringVal(b))
		}
		best[ks] = cty.ListVal(names)
		scores[ks] = cty.NumberFloatVal(r.Best().Score)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return cty.NilVal, err
	}
	if err := os.WriteFile(filepath.Join(env.OutDir, "search.json"), data, 0o644); err != nil {
		return cty.NilVal, err
	}
	return cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal(env.OutDir), "tiers": cty.MapVal(tiers),
		"best": cty.MapVal(best), "scores": cty.MapVal(scores), "consensus": cty.MapVal(consensus),
	}), nil
}

// tierOrder lists the best combination most important member first.
func tierOrder(r eevee.KResult) []string {
	if len(r.Importance) == len(r.Best().Benchmarks) {
		out := make([]string, len(r.Importance))
		for i, imp := range r.Importance {
			out[i] = imp.Benchmark
		}
		return out
	}
	return r.Best().Benchmarks
}

func writeCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(header)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

func writeSingle(path string, single []eevee.Candidate) error {
	var rows [][]string
	for i, c := range single {
		rows = append(rows, []string{strconv.Itoa(i + 1), c.Benchmarks[0], ff(c.Score)})
	}
	return writeCSV(path, []string{"rank", "benchmark", "score"}, rows)
}

func writeK(dir string, r eevee.KResult) error {
	k := strconv.Itoa(r.K)
	var rows [][]string
	for i, c := range r.Winners {
		rows = append(rows, []string{strconv.Itoa(i + 1), ff(c.Score), strings.Join(c.Benchmarks, ";")})
	}
	if err := writeCSV(filepath.Join(dir, "k"+k+"_winners.csv"), []string{"rank", "score", "benchmarks"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, h := range r.History {
		rows = append(rows, []string{strconv.Itoa(h.Generation), ff(h.Best), ff(h.Q1), ff(h.Median), ff(h.Q3), ff(h.Worst), strconv.Itoa(h.Scored)})
	}
	if err := writeCSV(filepath.Join(dir, "k"+k+"_history.csv"), []string{"generation", "best", "q1", "median", "q3", "worst", "scored"}, rows); err != nil {
		return err
	}
	rows = nil
	for _, imp := range r.Importance {
		rows = append(rows, []string{imp.Benchmark, ff(imp.Without), ff(imp.Increase)})
	}
	return writeCSV(filepath.Join(dir, "k"+k+"_importance.csv"), []string{"benchmark", "score_without", "increase"}, rows)
}

// writeTier writes a module directory whose output "benchmarks" lists the
// tier, so `module "tier" { source = "<dir>" }` uses what the search found.
func writeTier(dir string, r eevee.KResult, rep Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	o := rep.Options
	body.AppendUnstructuredTokens(hclwrite.TokensForIdentifier(""))
	comment := fmt.Sprintf("# GATE tier of %d benchmarks chosen by EEVEE (gatepipe search block).\n"+
		"# Matrix %s: %d models x %d metric columns. Scoring: weighting=%s targets=%s columns=%s\n"+
		"# splits=%d test_size=%g hidden=%d %s layer_norm=%v epochs=%d seed=%d.\n"+
		"# Score (mean validation error, lower is better): %.6f. Members most important first.\n"+
		"# Generated: re-run the search instead of editing.\n\n",
		r.K, rep.Matrix, rep.Models, rep.Columns, o.Weighting, o.Targets, o.Columns, o.Splits, o.TestSize, o.Hidden, o.Activation, o.LayerNorm, o.Epochs, o.Seed, r.Best().Score)
	var names []cty.Value
	for _, b := range tierOrder(r) {
		names = append(names, cty.StringVal(b))
	}
	out := body.AppendNewBlock("output", []string{"benchmarks"}).Body()
	out.SetAttributeValue("description", cty.StringVal(fmt.Sprintf("The %d benchmarks of this tier.", r.K)))
	out.SetAttributeValue("value", cty.ListVal(names))
	body.AppendNewline()
	sc := body.AppendNewBlock("output", []string{"score"}).Body()
	sc.SetAttributeValue("description", cty.StringVal("EEVEE score of the combination (lower predicts the pool better)."))
	sc.SetAttributeValue("value", cty.NumberFloatVal(r.Best().Score))
	data := append([]byte(comment), hclwrite.Format(f.Bytes())...)
	return os.WriteFile(filepath.Join(dir, "main.hcl"), data, 0o644)
}

// stability repeats the search under each further scoring seed (the
// splits and meta-model initialisations change; the evolution's own seed
// does not) and summarises the best sets.
func (n *Node) stability(ctx context.Context, m *eevee.Matrix, so eevee.SearchOptions, workers int, first []eevee.KResult) ([]eevee.Stability, error) {
	runs := [][]eevee.KResult{first}
	for _, seed := range n.seeds[1:] {
		o := n.Opts
		o.Seed = seed
		p, err := eevee.NewProblem(m, o)
		if err != nil {
			return nil, err
		}
		res, err := p.Search(ctx, p.NewEvaluator(workers), so)
		if err != nil {
			return nil, fmt.Errorf("scoring seed %d: %w", seed, err)
		}
		runs = append(runs, res)
	}
	return eevee.StabilityOf(n.seeds, runs), nil
}

func writeStability(path string, st []eevee.Stability) error {
	var rows [][]string
	for _, s := range st {
		names := make([]string, 0, len(s.Frequency))
		for b := range s.Frequency {
			names = append(names, b)
		}
		sort.Slice(names, func(i, j int) bool {
			if s.Frequency[names[i]] != s.Frequency[names[j]] {
				return s.Frequency[names[i]] > s.Frequency[names[j]]
			}
			return names[i] < names[j]
		})
		for _, b := range names {
			rows = append(rows, []string{strconv.Itoa(s.K), b, ff(s.Frequency[b]), strconv.FormatBool(slices.Contains(s.Consensus, b))})
		}
	}
	return writeCSV(path, []string{"k", "benchmark", "frequency", "consensus"}, rows)
}
