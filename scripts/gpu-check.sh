#!/usr/bin/env bash
# The GPU check in one command: every torch path of gatepipe against CUDA,
# unattended, with one markdown table of results for SPEC §9.
#
#   bash scripts/gpu-check.sh OUTDIR
#
# Run from anywhere in the checkout. Needs a Python with torch and
# torchvision ($GATEPIPE_TEST_PYTHON, else python3 or /usr/bin/python3 if
# that has them) and the test binaries:
# on a GPU machine without Go, those `make gpu-pack` packs and `source
# scripts/gpu-unpack.sh` puts on PATH; with Go, `make
# gpu-check` builds them. Without CUDA it runs the same steps on CPU torch,
# says "no GPU: CUDA parts skipped", and skips what needs a GPU.
#
# Steps (each with a time limit, and all within GPU_CHECK_BUDGET_S, default
# 840 s: a step that would pass the budget gets what is left, and one with
# under 40 s left is skipped as "out of time"). On a GPU machine the
# checks of agreement (all but bench) run at once, then the benchmarks
# alone; on CPU torch one after another, in this order but for bench,
# which comes last:
#   worker     the worker package's own unit tests (python -m unittest)
#   features   Go and torch features agree (TestTorchRuntimeMatchesGo)
#   bench      features of ResNet-50 and ViT-B/16 at 224 px (fp32, tf32, bf16)
#              and ResNet-18 training, each beside a bare PyTorch loop, and
#              on a GPU the feed (BenchmarkTorchRuntimeGPUFeed: ResNet-50
#              bf16 features and training from a 20,000-image host store
#              against the split resident on the GPU; GATEPIPE_FEED_IMAGES),
#              with GPU utilisation sampled by nvidia-smi; 4,096 images on
#              a GPU (2,048 timed a bf16 ResNet-50 pass of 0.24 s, too short
#              for the utilisation to mean much), 96 on CPU
#   families   nine task families trained on both runtimes agree
#   library    the families on torchvision:resnet18 (and timm:resnet18 where
#              timm is installed), and the torchvision ResNet as the preset
#   resume     kill -9 during training, then resume, on the GPU
#   tier       the small tier at test scale, trainer = "torch", gpus = 1,
#              and with the default trainer (auto: the torch runtime on a GPU,
#              each node planned with its time)
#   transform  the evaluation transform on both runtimes
#   probe      linear probes agree (TestProbeOnTorchEqualsGo)
#   episodes   few-shot adapters agree (TestEpisodesOnTorchEqualGo)
#   two-gpus   two torch nodes at once on two GPUs (only with two)
# GPU_CHECK_STEPS="resume tier ..." runs only the steps it names (a rerun
# of those that failed, when device time is short). GPU_CHECK_CHECKS_S caps
# each agreement step's limit, so that the benchmarks after them keep the
# rest of the budget.
# Logs: OUTDIR/STEP.log, the samples of GPU and CPU use (nvidia-smi.csv,
# cpu-busy.txt), and the logs of the gatepipe runs inside each
# step's tests in OUTDIR/STEP.runs.tgz; table: OUTDIR/gpu-check.md, rewritten after every
# step, so a check cut off by its caller still leaves the rows it has.
set -uo pipefail
out=${1:?usage: gpu-check.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
# A relative GATEPIPE_TEST_BIN is the caller's: the steps run elsewhere.
if [ -n "${GATEPIPE_TEST_BIN:-}" ] && [ -d "$GATEPIPE_TEST_BIN" ]; then
	GATEPIPE_TEST_BIN=$(cd "$GATEPIPE_TEST_BIN" && pwd)
fi
cd "$top"

py=""
for cand in ${GATEPIPE_TEST_PYTHON:-python3 /usr/bin/python3}; do
	if "$cand" -c "import torch, torchvision" 2>/dev/null; then py=$cand; break; fi
done
if [ -z "$py" ]; then
	echo "gpu-check: ${GATEPIPE_TEST_PYTHON:-python3 (or /usr/bin/python3)} cannot import torch and torchvision; set GATEPIPE_TEST_PYTHON" >&2
	exit 2
fi
export GATEPIPE_TEST_PYTHON=$py
gpus=$("$py" -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
export GATEPIPE_TEST_CUDA=$gpus
if [ "$gpus" = 0 ]; then
	echo "no GPU: CUDA parts skipped (the steps run on CPU torch; resume and two-gpus are skipped)"
fi

# The test binaries: NAME.test on PATH (unpack.sh) or in $GATEPIPE_TEST_BIN.
testbin() {
	local name=$1
	for d in ${GATEPIPE_TEST_BIN:-} $(echo "$PATH" | tr ':' ' '); do
		if [ -x "$d/$name.test" ]; then echo "$d/$name.test"; return 0; fi
	done
	return 1
}
gatepipe=$(command -v gatepipe || true)
[ -n "${GATEPIPE_TEST_BIN:-}" ] && [ -x "$GATEPIPE_TEST_BIN/gatepipe" ] && gatepipe=$GATEPIPE_TEST_BIN/gatepipe
if [ -z "$gatepipe" ]; then
	echo "gpu-check: no gatepipe binary on PATH or in \$GATEPIPE_TEST_BIN (make gpu-pack, then source scripts/gpu-unpack.sh)" >&2
	exit 2
fi
export GATEPIPE_TEST_BINARY=$gatepipe GATEPIPE_PYTHON=$py

if [ "$gpus" != 0 ] && command -v nvidia-smi >/dev/null; then
	machine="Machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1) x $gpus, $(nproc) CPUs; $("$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)')."
else
	machine="Machine: no GPU (CUDA parts skipped), $(nproc) CPUs; $("$py" -c 'import torch; print("torch", torch.__version__)')."
fi
# table rewrites OUTDIR/gpu-check.md from the rows so far.
table() {
	{
		echo "## GPU check, $(date -u +%Y-%m-%d)"
		echo
		echo "$machine"
		echo "Command: \`bash scripts/gpu-check.sh OUTDIR\` (GATEPIPE_TEST_CUDA=$gpus, GPU_CHECK_BUDGET_S=$budget${GPU_CHECK_STEPS:+, GPU_CHECK_STEPS=\"$GPU_CHECK_STEPS\"})."
		echo
		echo "| step | result | time | command |"
		echo "| --- | --- | ---: | --- |"
		for n in "${order[@]}"; do [ -f "$rowdir/$n" ] && cat "$rowdir/$n"; done
		if [ -f "$rowdir/bench" ] && grep -q "torch runtime" "$out/bench.log" 2>/dev/null; then
			echo
			echo "Benchmarks (torch runtime against a bare PyTorch loop on the same device; ratio > 1: gatepipe faster):"
			echo
			grep "torch runtime" "$out/bench.log" | sed 's/^/- /'
		fi
		if [ -s "$utilfile" ]; then
			echo
			awk -F', ' '{gsub(/ %/, "", $3); s += $3; n++; if ($3 > m) m = $3} END {if (n) printf "GPU utilisation over the whole check (nvidia-smi every 0.5 s): mean %.0f%%, max %d%%, %d samples.\n", s/n, m, n}' "$utilfile"
		fi
		if [ -s "$cpufile" ]; then
			[ -s "$utilfile" ] || echo
			awk -v cpus="$(nproc)" '{s += $1; n++; if ($1 > m) m = $1; if ($1 >= 95) f++} END {if (n) printf "CPUs busy over the whole check (/proc/stat every 1 s, %d CPUs): mean %.0f%%, max %d%%, at 95%% or more in %d of %d samples.\n", cpus, s/n, m, f, n}' "$cpufile"
		fi
	} >"$out/.gpu-check.md.$BASHPID" && mv "$out/.gpu-check.md.$BASHPID" "$out/gpu-check.md"
}
# Each step leaves its row in $rowdir/NAME (steps may run at once); the
# table lists them in this order.
order=(worker features bench families library resume tier transform probe episodes two-gpus)
rowdir=$out/.rows
rm -rf "$rowdir" && mkdir -p "$rowdir"
budget=${GPU_CHECK_BUDGET_S:-840}
# step NAME LIMIT_S DIR COMMAND...: runs COMMAND in DIR with a time limit,
# its output in OUTDIR/NAME.log, and adds a table row.
step() {
	local name=$1 limit=$2 dir=$3; shift 3
	local start=$SECONDS status left=$((budget - SECONDS))
	if [ -n "${GPU_CHECK_STEPS:-}" ] && [[ " $GPU_CHECK_STEPS " != *" $name "* ]]; then
		return
	fi
	if [ "$left" -lt 40 ]; then
		skip "$name" "out of time (GPU_CHECK_BUDGET_S=$budget)"
		touch "$rowdir/.failed" # not checked is not passed
		return
	fi
	[ "$limit" -gt $((left - 10)) ] && limit=$((left - 10))
	echo "== $name: $*"
	# GATEPIPE_TEST_LOGS: each run of gatepipe in the tests writes its log
	# there as it goes (a test cut off by its limit prints nothing of it);
	# packed into OUTDIR/NAME.runs.tgz after the step.
	(cd "$dir" && GATEPIPE_TEST_LOGS=$out/$name.runs timeout --kill-after=10 "$limit" "$@") >"$out/$name.log" 2>&1
	case $? in
	0) status=pass ;;
	124 | 137) status="FAIL (over ${limit} s)"; touch "$rowdir/.failed" ;;
	*) status=FAIL; touch "$rowdir/.failed" ;;
	esac
	if [ -d "$out/$name.runs" ]; then
		tar czf "$out/$name.runs.tgz" -C "$out" "$name.runs" && rm -rf "$out/$name.runs"
	fi
	if [ "$status" = pass ] && grep -q -- "--- SKIP" "$out/$name.log" && ! grep -q -- "--- PASS" "$out/$name.log"; then
		status="skipped: $(grep -m1 -A1 -- '--- SKIP' "$out/$name.log" | tail -1 | sed 's/^ *//' | cut -c1-80)"
	fi
	echo "   $status ($((SECONDS - start)) s)"
	echo "| $name | $status | $((SECONDS - start)) s | \`$(echo "$*" | sed "s|$top/||g" | cut -c1-110)\` |" >"$rowdir/$name"
	table
}
skip() {
	if [ -n "${GPU_CHECK_STEPS:-}" ] && [[ " $GPU_CHECK_STEPS " != *" $1 "* ]]; then
		return
	fi
	echo "| $1 | skipped: $2 | | |" >"$rowdir/$1"
	echo "== $1: skipped: $2"
	table
}
gotest() { # gotest NAME LIMIT PKG_DIR BINARY REGEXP [extra args]
	local name=$1 limit=$2 dir=$3 bin=$4 re=$5; shift 5
	local b
	if ! b=$(testbin "$bin"); then
		skip "$name" "no $bin.test (make gpu-pack)"
		touch "$rowdir/.failed"
		return
	fi
	local left=$((budget - SECONDS - 20))
	[ "$limit" -gt "$left" ] && [ "$left" -gt 20 ] && limit=$left
	if [ "$name" != bench ] && [ -n "${GPU_CHECK_CHECKS_S:-}" ] && [ "$limit" -gt "$GPU_CHECK_CHECKS_S" ]; then
		limit=$GPU_CHECK_CHECKS_S
	fi
	step "$name" "$limit" "$top/$dir" "$b" -test.run "$re" -test.v -test.count=1 -test.timeout "$((limit - 5))s" "$@"
}

utilfile=$out/nvidia-smi.csv cpufile=$out/cpu-busy.txt
rm -f "$utilfile" "$cpufile" # an earlier check's samples, in a reused OUTDIR
samplers=()
trap 'kill ${samplers[@]+"${samplers[@]}"} 2>/dev/null' EXIT
if [ "$gpus" != 0 ] && command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader -lms 500 >"$utilfile" 2>/dev/null &
	samplers+=($!)
fi
# cpubusy prints the share of the machine's CPU time that was busy, in
# percent, every second (/proc/stat): the checks run at once on a GPU
# machine, and a slow step there is CPU-bound or not.
cpubusy() {
	local u n s i w q sq st rest idle total pidle="" ptotal=""
	while read -r _ u n s i w q sq st rest </proc/stat; do
		idle=$((i + w)) total=$((u + n + s + i + w + q + sq + st))
		if [ -n "$ptotal" ] && [ "$total" -gt "$ptotal" ]; then
			echo $((100 * ((total - ptotal) - (idle - pidle)) / (total - ptotal)))
		fi
		pidle=$idle ptotal=$total
		sleep 1
	done
}
if [ -r /proc/stat ]; then
	cpubusy >"$cpufile" &
	samplers+=($!)
fi

# The checks of agreement first: at once on a GPU machine (they measure
# no time, and the budget is short), one by one on CPU torch. Then the
# benchmarks, alone on the machine.
checks() {
	local pids=()
	# started STEP...: runs a step in the background, its PID kept for
	# the wait below; one at a time (waiting for it) unless bg is ":".
	started() {
		"$@" &
		pids+=($!)
		if [ "$bg" = wait ]; then wait "$!"; fi
	}
	started step worker 120 "$top/nodes/torchrt/py" "$py" -m unittest discover -s tests -t .
	started gotest features 240 nodes/features nodes_features 'Torch|Library'
	started gotest families 420 cmd/gatepipe cmd_gatepipe 'TestEveryFamilyTrainsOnTorchAsInGo|TestPipelineDefaultRuntime'
	started gotest library 420 cmd/gatepipe cmd_gatepipe 'TestLibraryEncoderTrainsEveryFamilyOnTorch|TestLibraryResNetTrainsAsThePreset'
	if [ "$gpus" != 0 ]; then
		started gotest resume 240 cmd/gatepipe cmd_gatepipe 'TestKilledTrainOnTorchRuntimeResumes'
	else
		skip resume "no GPU (make test runs it on CPU torch)"
	fi
	started gotest tier 300 cmd/gatepipe cmd_gatepipe 'TestSmallTierOnTheTorchTrainer|TestSmallTierOnAutoUsesTheGPU|TestPlanEstimateMatchesTheRun'
	started gotest transform 180 cmd/gatepipe cmd_gatepipe 'TestEvaluationTransformOnBothRuntimes'
	started gotest probe 120 nodes/probenode nodes_probenode 'Torch'
	started gotest episodes 120 nodes/episodesnode nodes_episodesnode 'Torch'
	# Only the steps: a bare wait would also wait for the samplers (of
	# nvidia-smi and the CPUs), which run until the end (the first H100
	# check hung there).
	[ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
}
# The checks' torch nodes share each GPU eight at a time (GATEPIPE_GPU_SHARE):
# with one node per GPU the families' small torch nodes ran one after another
# on the first GPU check, each paying the worker's start-up alone.
export GATEPIPE_GPU_SHARE=${GATEPIPE_GPU_SHARE:-8}
# bg is "wait" (one at a time) unless GPUs are there or GPU_CHECK_PARALLEL=1.
bg=wait
[ "$gpus" != 0 ] || [ "${GPU_CHECK_PARALLEL:-}" = 1 ] && bg=:
checks
if [ "$gpus" -ge 2 ] 2>/dev/null; then
	GATEPIPE_TEST_CUDA=2 gotest two-gpus 240 cmd/gatepipe cmd_gatepipe 'TestTorchNodesOnTwoGPUs'
else
	skip two-gpus "$gpus GPU(s)"
fi
if [ "$gpus" != 0 ]; then
	GATEPIPE_BENCH_IMAGES=${GATEPIPE_BENCH_IMAGES:-4096} gotest bench 420 nodes/torchrt nodes_torchrt '^$' -test.bench 'BenchmarkTorchRuntime(Features|TrainResNet18|Feed|GPUFeed)$' -test.benchtime 1x
else
	GATEPIPE_BENCH_IMAGES=${GATEPIPE_BENCH_IMAGES:-96} gotest bench 420 nodes/torchrt nodes_torchrt '^$' -test.bench 'BenchmarkTorchRuntime(Features|TrainResNet18|Feed)$' -test.benchtime 1x
fi
[ ${#samplers[@]} -eq 0 ] || kill "${samplers[@]}" 2>/dev/null

table
echo
cat "$out/gpu-check.md"
[ ! -e "$rowdir/.failed" ]
