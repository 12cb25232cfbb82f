package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/train"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// evalMarker opens every pipeline eval writes: eval rewrites only files
// that carry it, never one a user wrote.
const evalMarker = "# Written by `gatepipe eval`."

const evalUsage = `eval -encoder ENCODER [-weights W] [-tier small|base|big] [flags] [apply flags]

Evaluates one encoder on a GATE tier in one line, as lm-eval's --model
--tasks does: it writes the equivalent pipeline (an encoder block and a
call of stdlib/tiers/TIER) to -out/main.hcl, plans it (the runtime and the
time estimate), then applies it. Past a day of estimated time, or at
-scale full on a machine without GPUs, it asks first on a terminal and
elsewhere stops before anything runs unless -auto-approve. Every apply
flag (-cache-dir, -mirror, -offline, -devices, ...) passes through. The
pipeline is plain HCL: edit it and run 'gatepipe apply DIR' again; a
second eval or apply of it reuses everything cached.

ENCODER is whatever an encoder block's arch or preset takes: an
architecture (mlp, convnet, resnet, convnext, vit: built-in sizes), a
preset (resnet50, vit_b_16, convnext_tiny, ...: SPEC.md lists them),
timm:NAME (a preset's name: gatepipe builds the same network on either
runtime; any other timm model: timm builds it, torch runtime),
torchvision:NAME (torch runtime), patchroot:NAME (GATE's patch root on
google-bert/bert-base-uncased, facebook/bart-base,
sentence-transformers/all-mpnet-base-v2 or openai/whisper-base; torch
runtime; SPEC §5.9), or python:PATH:CALLABLE, your own
PyTorch module (torch runtime; SPEC §5.6 "Your own encoder"). -runtime auto (the default)
trains on PyTorch, one GPU per node, where the machine has NVIDIA GPUs and
python's torch sees them, and on gatepipe's Go runtime on the CPUs
otherwise; 'gatepipe plan DIR' says which it picked, and why, and how long
the evaluation should take. -runtime torch trains every benchmark of the
tier on PyTorch (one GPU per node with -gpus 1). Examples:

  gatepipe eval -encoder resnet50 -weights torchvision:resnet50.IMAGENET1K_V2 -tier small -scale cpu
  gatepipe eval -encoder timm:vit_base_patch16_224 -weights hf:timm/vit_base_patch16_224.augreg2_in21k_ft_in1k -tier base -runtime torch -gpus 1
  gatepipe eval -encoder convnet -tier small -scale test -seeds 0,1,2
  gatepipe eval -encoder python:mymodel.py:MyNet -tier small -scale smoke   # offline check of your own module first`

// evalConfig is what an eval command line asks for.
type evalConfig struct {
	encoder, weights, tier, runtime, scale, model, out, python string
	// adapters is the tiers' adapters: "gate" or "compact" ("": the
	// tier's default).
	adapters    string
	seeds       []uint64
	gpus        int
	autoApprove bool
}

// evalFlagNames are eval's own flags; any other flag goes to apply.
var evalFlagNames = []string{"encoder", "weights", "tier", "runtime", "scale", "model", "out", "python", "seeds", "gpus", "auto-approve", "adapters"}

func runEval(ctx context.Context, c *cli, args []string) int {
	own, rest := splitEvalArgs(args)
	fs := newFlagSet(c, "eval", evalUsage)
	var cfg evalConfig
	var seeds string
	fs.StringVar(&cfg.encoder, "encoder", "", "the encoder: an architecture, a preset, timm:NAME, torchvision:NAME, patchroot:NAME, python:PATH:CALLABLE, or one of the paper's 21 by its Table 3 id (cvnxtv2, clip, ...; gate:ID where the id is also an architecture: gate:vit) (required)")
	fs.StringVar(&cfg.weights, "weights", "", "initial weights: a safetensors PATH, hf:OWNER/NAME or torchvision:MODEL.WEIGHTS (default: none, random initialisation)")
	fs.StringVar(&cfg.tier, "tier", "small", "the GATE tier: small (8 benchmarks), base (15) or big (21)")
	fs.StringVar(&cfg.runtime, "runtime", "auto", "auto (torch on one GPU per node where the machine has GPUs and python's torch sees them, else go), go (gatepipe's runtime, CPU) or torch (PyTorch, on GPUs with -gpus: every benchmark)")
	fs.StringVar(&cfg.scale, "scale", "full", "full (GATE's protocol), cpu (capped for a CPU machine), test (tiny, for checks) or smoke (tiny, offline, on gatepipe's own fixtures of the benchmarks: -mirror smoke)")
	fs.StringVar(&cfg.model, "model", "", "the encoder's name in results (default: from -encoder)")
	fs.StringVar(&cfg.adapters, "adapters", "", "table3 (GATE's task adapters, CLIP text tower and recipe as its code produced Table 3, defects included; on the torch runtime: SPEC §5.9), gate (the same, GATE's defects mended) or compact (gatepipe's small heads, on either runtime) (default: table3, compact with -runtime go)")
	fs.StringVar(&cfg.out, "out", "", "directory to write main.hcl into (default: eval-MODEL-TIER)")
	fs.StringVar(&cfg.python, "python", "", "the Python with PyTorch for -runtime torch or auto (default: $GATEPIPE_PYTHON, else python3)")
	fs.StringVar(&seeds, "seeds", "", "comma-separated seeds: train each benchmark once per seed and report mean ± std (n)")
	fs.IntVar(&cfg.gpus, "gpus", -1, "GPUs per torch node, 0 or 1 (default: 1 where auto picks torch, else 0)")
	fs.BoolVar(&cfg.autoApprove, "auto-approve", false, "start without asking when the plan's estimate is past a day, or the scale is full on a machine without GPUs (without a terminal eval otherwise exits before anything runs)")
	pos, code, ok := parseArgs(fs, own)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "gatepipe eval: unexpected argument %q: eval takes flags only (-out names the directory)\n", pos[0])
		return exitConfigError
	}
	var err error
	if cfg.seeds, err = parseSeeds(seeds); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eval:", err)
		return exitConfigError
	}
	text, err := cfg.pipeline()
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eval:", err)
		return exitConfigError
	}
	dir := cfg.out
	if dir == "" {
		dir = "eval-" + slugName(cfg.modelName()) + "-" + cfg.tier + "-" + cfg.scale + "-" + cfg.runtime
	}
	main := filepath.Join(dir, "main.hcl")
	if err := writeEvalPipeline(main, text); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe eval:", err)
		return exitConfigError
	}
	if cfg.scale == "smoke" {
		fmt.Fprintf(c.stderr, "gatepipe eval: -scale smoke: the benchmarks are gatepipe's own tiny fixtures in their real formats (mirror = \"smoke\", offline); the numbers measure mechanics only\n")
	}
	fmt.Fprintf(c.stderr, "gatepipe eval: wrote %s (edit it and run 'gatepipe apply %s' to run it again); planning it\n", main, dir)
	if est, ok := c.planEval(ctx, dir, rest); ok {
		if why := est.needsApproval(cfg.scale); why != "" && !cfg.autoApprove && !c.approveEval(why, dir) {
			return exitRunFailure
		}
	}
	if ctx.Err() != nil {
		return exitRunFailure
	}
	fmt.Fprintf(c.stderr, "gatepipe eval: applying %s\n", dir)
	return runApply(ctx, c, append(rest, dir))
}

// splitEvalArgs separates eval's own flags (with their values) from the
// rest, which apply parses.
func splitEvalArgs(args []string) (own, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		if !strings.HasPrefix(a, "-") || !slices.Contains(append(evalFlagNames, "h", "help"), name) {
			rest = append(rest, a)
			continue
		}
		own = append(own, a)
		if !hasValue && name != "h" && name != "help" && i+1 < len(args) {
			i++
			own = append(own, args[i])
		}
	}
	return own, rest
}

// parseSeeds reads "0,1,2".
func parseSeeds(s string) ([]uint64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seeds %q: %q is not a whole number ≥ 0", s, f)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("-seeds %q: seed %d appears twice", s, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// modelName is the encoder's name in results: -model, else the preset,
// library model or callable the encoder names.
func (e evalConfig) modelName() string {
	if e.model != "" {
		return e.model
	}
	if _, callable, ok := train.SplitUserArch(e.encoder); ok {
		return callable
	}
	return strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(e.encoder, "timm:"), "torchvision:"), "gate:"), train.PatchRootPrefix)
}

// userArch is -encoder python:PATH:CALLABLE with PATH made absolute (the
// pipeline is written elsewhere); the file must exist.
func (e evalConfig) userArch() (string, error) {
	path, callable, ok := train.SplitUserArch(e.encoder)
	if !ok {
		return "", fmt.Errorf("-encoder %s: write python:PATH:CALLABLE, as in python:mymodel.py:MyNet", e.encoder)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(abs); err != nil || !info.Mode().IsRegular() {
		return "", fmt.Errorf("-encoder %s: %s is not a file", e.encoder, abs)
	}
	if e.runtime == "go" {
		return "", fmt.Errorf("-encoder %s is your own PyTorch module: it runs on the torch runtime (-runtime torch or auto), not -runtime go", e.encoder)
	}
	return train.UserArchPrefix + abs + ":" + callable, nil
}

// pipeline writes the HCL of the evaluation, or says what is wrong with
// the command line.
func (e evalConfig) pipeline() (string, error) {
	if e.encoder == "" {
		return "", errors.New("-encoder is required: an architecture (" + strings.Join(train.Archs, ", ") + "), a preset (resnet50, vit_b_16, ...), timm:NAME, torchvision:NAME or python:PATH:CALLABLE")
	}
	if !slices.Contains([]string{"small", "base", "big"}, e.tier) {
		return "", fmt.Errorf("-tier %q: want small, base or big", e.tier)
	}
	if !slices.Contains([]string{"auto", "go", "torch"}, e.runtime) {
		return "", fmt.Errorf("-runtime %q: want auto, go or torch", e.runtime)
	}
	if !slices.Contains([]string{"full", "cpu", "test", "smoke"}, e.scale) {
		return "", fmt.Errorf("-scale %q: want full, cpu, test or smoke", e.scale)
	}
	if !slices.Contains([]string{"", "table3", "gate", "compact"}, e.adapters) {
		return "", fmt.Errorf("-adapters %q: want table3, gate or compact", e.adapters)
	}
	if (e.adapters == "table3" || e.adapters == "gate") && e.runtime == "go" {
		return "", fmt.Errorf("-adapters %s needs the torch runtime (GATE's adapters run on PyTorch): use -runtime auto or torch, or -adapters compact", e.adapters)
	}
	if e.gpus < -1 || e.gpus > 1 || (e.gpus > 0 && e.runtime == "go") {
		return "", errors.New("-gpus is 0 or 1, with -runtime torch or auto (the go runtime trains on CPUs)")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n# Re-run it with: gatepipe apply DIR (every block is cached).\n\n", evalMarker)
	if e.scale == "smoke" {
		// gatepipe's own fixtures of the benchmarks, served offline.
		fmt.Fprintf(&b, "gatepipe {\n  mirror = %q\n}\n\n", sources.SmokeMirror)
	}
	b.WriteString("encoder \"mine\" {\n")
	name, isTimm := strings.CutPrefix(e.encoder, "timm:")
	paper, isPaper, err := paperEncoderFor(e.encoder)
	if err != nil {
		return "", err
	}
	switch {
	case isPaper:
		var sb strings.Builder
		w, err := paper.block(&sb, e.weights, e.adapters)
		if err != nil {
			return "", err
		}
		b.WriteString(sb.String())
		e.weights = w
	case strings.HasPrefix(e.encoder, train.UserArchPrefix):
		arch, err := e.userArch()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  arch = %q\n", arch)
	case strings.HasPrefix(e.encoder, "torchvision:") && len(e.encoder) > len("torchvision:"):
		fmt.Fprintf(&b, "  arch = %q\n", e.encoder)
	case strings.HasPrefix(e.encoder, train.PatchRootPrefix):
		if !slices.Contains(train.PatchRootModels, strings.TrimPrefix(e.encoder, train.PatchRootPrefix)) {
			return "", fmt.Errorf("-encoder %s: GATE's patch root is built for %s%s", e.encoder, train.PatchRootPrefix,
				strings.Join(train.PatchRootModels, ", "+train.PatchRootPrefix))
		}
		fmt.Fprintf(&b, "  arch = %q\n", e.encoder)
		fmt.Fprintf(&b, "  family = %q\n", "transformer")
	case isTimm && name == "":
		return "", fmt.Errorf("-encoder timm: names no model: write timm:NAME, as in timm:vit_base_patch16_224")
	case isTimm:
		if _, err := train.Preset(name); err != nil {
			// Not one of gatepipe's presets: timm builds it, on the torch runtime.
			fmt.Fprintf(&b, "  arch = %q\n", e.encoder)
			break
		}
		fmt.Fprintf(&b, "  preset = %q\n", name)
	case slices.Contains(train.Archs, e.encoder):
		fmt.Fprintf(&b, "  arch = %q\n", e.encoder)
	default:
		if _, err := train.Preset(e.encoder); err != nil {
			return "", fmt.Errorf("-encoder %s: not an architecture (%s), and %w", e.encoder, strings.Join(train.Archs, ", "), err)
		}
		fmt.Fprintf(&b, "  preset = %q\n", e.encoder)
	}
	if arch := e.encoder; (train.IsPatchRoot(arch) || isPaper && train.IsPatchRoot(paper.Arch)) && e.runtime == "go" {
		return "", fmt.Errorf("-encoder %s is GATE's patch root on a Hugging Face encoder, which only the torch worker builds: use -runtime torch or auto, not -runtime go", e.encoder)
	}
	if w := e.weights; w != "" {
		if !specs.IsHubWeights(w) && !specs.IsTorchvisionWeights(w) {
			abs, err := filepath.Abs(w)
			if err != nil {
				return "", err
			}
			if info, err := os.Stat(abs); err != nil || info.IsDir() {
				return "", fmt.Errorf("-weights %s: not a file (want a safetensors file, hf:OWNER/NAME or torchvision:MODEL.WEIGHTS)", w)
			}
			w = abs
		}
		fmt.Fprintf(&b, "  weights = %q\n", w)
	}
	b.WriteString("}\n\n")
	fmt.Fprintf(&b, "module \"gate\" {\n  source  = \"stdlib/tiers/%s\"\n  encoder = encoder.mine\n  model   = %q\n  scale   = %q\n", e.tier, e.modelName(), e.scale)
	if e.adapters != "" {
		fmt.Fprintf(&b, "  adapters = %q\n", e.adapters)
	}
	switch e.runtime {
	case "go":
		b.WriteString("  trainer = \"builtin\"\n")
	case "torch":
		b.WriteString("  trainer = \"torch\"\n")
	}
	if e.runtime != "go" {
		if e.gpus >= 0 {
			fmt.Fprintf(&b, "  gpus = %d\n", e.gpus)
		}
		if e.python != "" {
			fmt.Fprintf(&b, "  python = %q\n", e.python)
		}
	}
	if len(e.seeds) > 0 {
		fmt.Fprintf(&b, "  seeds = %s\n", strings.ReplaceAll(fmt.Sprint(e.seeds), " ", ", "))
	}
	b.WriteString("}\n\n")
	for _, o := range []string{"table", "measured", "not_run", "position", "report"} {
		fmt.Fprintf(&b, "output %q {\n  value = module.gate.%s\n}\n\n", o, o)
	}
	return string(hclwrite.Format(b.Bytes())), nil
}

// writeEvalPipeline writes text to path, refusing to replace a file that
// eval did not write.
func writeEvalPipeline(path, text string) error {
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !bytes.HasPrefix(old, []byte(evalMarker)):
		return fmt.Errorf("%s exists and was not written by eval: choose another -out, or apply it with 'gatepipe apply %s'", path, filepath.Dir(path))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// slugName makes a model name a directory name.
func slugName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
