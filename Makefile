# gatepipe: build, demo, tests and benchmarks.
#
#   make demo    applies examples/fashion_mnist (installs Debian's
#                dataset-fashion-mnist first when missing); run it twice to
#                see the second apply find everything cached
#   make test    vet, unit and integration tests, short fuzzing
#   make bench   Go benchmarks (not part of make test)

GO        ?= go
# EEVEE's scorer uses Go 1.26's experimental SIMD package (simd/archsimd)
# for AVX2/FMA kernels; without the experiment the same maths runs in
# portable Go (tested below too).
export GOEXPERIMENT ?= simd
BIN       := bin/gatepipe
# Recorded in run metadata and reports (`gatepipe version`).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
FUZZTIME  ?=
FMNIST    := /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz

# Training and features multiply matrices with OpenBLAS (cgo), from
# Debian's libopenblas-dev (deps-blas installs it as root). Without it
# `make build` stops and says how to install it: the portable Go BLAS is
# about 10x slower, so it is built only when asked for, with PORTABLE=1.
# Evaluated when used, so after deps-blas has run.
BLAS_TAG   = $(shell echo '\#include <cblas.h>' | $(CC) -E - >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q libopenblas && echo openblas)
# Datasets decode JPEGs with libjpeg-turbo (Debian's libturbojpeg0-dev,
# which deps-blas installs too); without it the portable Go decoder runs,
# about 3x slower, and `gatepipe version` says so.
JPEG_TAG   = $(shell echo '\#include <turbojpeg.h>' | $(CC) -E - >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q libturbojpeg && echo turbojpeg)
TAGS       = $(strip $(BLAS_TAG) $(JPEG_TAG))
PORTABLE  ?=
# The build's prerequisite that installs OpenBLAS (tests set it empty).
DEPS_BLAS ?= deps-blas

.PHONY: build demo test unit pyunit fuzz bench gpu-check gpu-pack deps-blas deps-demo deps-test deps-bench clean

build: $(DEPS_BLAS)
	@if [ -z "$(BLAS_TAG)" ] && [ -z "$(PORTABLE)" ]; then \
		echo "make build: OpenBLAS (cblas.h and libopenblas) was not found, and without it training and" >&2; \
		echo "features run about 10x slower. Install it:  sudo apt-get install libopenblas-dev" >&2; \
		echo "or build the portable version on purpose:   make build PORTABLE=1" >&2; \
		exit 1; \
	fi
	@if [ -z "$(BLAS_TAG)" ]; then echo "Building the portable version (PORTABLE=1): Go BLAS, about 10x slower than OpenBLAS." >&2; fi
	@if [ -z "$(JPEG_TAG)" ]; then echo "libturbojpeg0-dev was not found: datasets decode JPEGs with Go's decoder, about 3x slower (apt-get install libturbojpeg0-dev)." >&2; fi
	$(GO) build -tags "$(TAGS)" -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/gatepipe
	$(GO) build -o $(dir $(BIN))gatepipe-supervisor ./cmd/gatepipe-supervisor

deps-blas:
	@if [ -z "$(BLAS_TAG)" ] && [ -z "$(PORTABLE)" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "Installing libopenblas-dev (training's and features' matrix products)..."; \
			sh scripts/apt-install.sh libopenblas-dev >/dev/null || \
				echo "libopenblas-dev could not be installed"; \
		else \
			echo "libopenblas-dev is missing and we are not root to install it"; \
		fi; \
	fi
	@if [ -z "$(JPEG_TAG)" ] && [ -z "$(PORTABLE)" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "Installing libturbojpeg0-dev (datasets' JPEG decoding)..."; \
			sh scripts/apt-install.sh libturbojpeg0-dev >/dev/null || \
				echo "libturbojpeg0-dev could not be installed"; \
		else \
			echo "libturbojpeg0-dev is missing and we are not root to install it: JPEGs decode in Go, about 3x slower"; \
		fi; \
	fi

# Real data without internet: Debian packages Fashion-MNIST.
deps-demo:
	@if [ ! -f $(FMNIST) ]; then \
		echo "Installing dataset-fashion-mnist (Debian package)..."; \
		sh scripts/apt-install.sh dataset-fashion-mnist; \
	fi

demo: deps-blas build deps-demo
	./$(BIN) apply examples/fashion_mnist

test: deps-blas deps-demo deps-test unit pyunit fuzz

# The torch worker's Python package: pyflakes over it and its tests, then
# its unit tests under Debian's python3 (CPU torch), without gatepipe.
pyunit:
	@if /usr/bin/python3 -m pyflakes --version >/dev/null 2>&1; then \
		echo "pyflakes nodes/torchrt/py"; /usr/bin/python3 -m pyflakes nodes/torchrt/py || exit 1; \
	else echo "pyflakes3 is missing (apt-get install pyflakes3): the worker is not linted"; fi
	cd nodes/torchrt/py && /usr/bin/python3 -m unittest discover -s tests -t .

# The report's browser test needs Debian's chromium; install it when we can
# (as root, as CI is), otherwise that one test is skipped and says why.
deps-test:
	@if ! command -v chromium >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "Installing chromium for the report's browser test..."; \
			sh scripts/apt-install.sh chromium >/dev/null || \
				echo "chromium could not be installed: the browser test will be skipped"; \
		else \
			echo "chromium is missing and we are not root: the browser test will be skipped"; \
		fi; \
	fi
	@# The pretrained encoders' parity tests build their fixtures with
	@# torchvision (randomly initialised models, no hub).
	@# The transferability statistics are checked against scipy.
	@# pyflakes lints the torch worker's package.
	@if ! /usr/bin/python3 -c "import torchvision, scipy, h5py, PIL, pyflakes" 2>/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "Installing python3-torchvision, python3-scipy and pyflakes3 for the parity tests and the worker's lint..."; \
			sh scripts/apt-install.sh python3-torchvision python3-scipy python3-h5py python3-pil pyflakes3 >/dev/null || \
				echo "python3-torchvision could not be installed: the torchvision parity tests will fail in CI"; \
		else \
			echo "python3-torchvision is missing and we are not root: the torchvision parity tests will be skipped"; \
		fi; \
	fi
	@# Kinetics' reader decodes MP4 with ffmpeg; its tests write H.264 fixtures with it.
	@if ! command -v ffmpeg >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "Installing ffmpeg for the video reader's tests..."; \
			sh scripts/apt-install.sh ffmpeg >/dev/null || \
				echo "ffmpeg could not be installed: the video tests will fail in CI"; \
		else \
			echo "ffmpeg is missing and we are not root: the video tests will be skipped"; \
		fi; \
	fi
	@# The Slurm integration test needs a cluster: start a single-node one.
	@if [ "$$(id -u)" = 0 ]; then \
		bash scripts/slurm-localhost.sh start || echo "Slurm could not be started: its integration test will be skipped"; \
	else \
		echo "not root: no local Slurm cluster, its integration test will be skipped unless one answers"; \
	fi

unit:
	$(GO) vet ./...
	@echo "BLAS and JPEG build tags: '$(TAGS)'"
	$(GO) test -tags "$(TAGS)" -count=1 -timeout 40m ./...
	$(GO) test -count=1 ./train/cblas/
	GOEXPERIMENT= $(GO) test -short -count=1 ./eevee/... ./internal/...
	GOEXPERIMENT= $(GO) test -count=1 -run Pool ./train/

# Each fuzz target runs briefly (about 2-4 s); failures leave a reproducer
# in testdata/fuzz. The third field is the target's -fuzztime, a fixed
# count of executions rather than a duration: a duration run can fail with
# "context deadline exceeded" when the deadline falls while the coordinator
# is busy (seen in CI on formats/tabular), and shows "0/sec" for a worker
# that finds no new coverage until it returns; a count run prints the real
# rate. FUZZTIME overrides the count for every target.
FUZZ_TARGETS := \
	./pipelines:FuzzLoadConfig:2000x \
	./formats/idx:FuzzRead:50000x \
	./formats/cifar:FuzzRead:40000x \
	./formats/cifar:FuzzReadPickle:40000x \
	./formats/imagecsv:FuzzParseTable:40000x \
	./formats/imagecsv:FuzzParseLabelList:40000x \
	./formats/vqajson:FuzzRead:40000x \
	./formats/cameratrap:FuzzReadSequences:40000x \
	./formats/cameratrap:FuzzReadCounts:40000x \
	./formats/gulp:FuzzReadMeta:40000x \
	./formats/gulp:FuzzReadSplit:40000x \
	./formats/matv5:FuzzRead:40000x \
	./formats/hdf5:FuzzRead:40000x \
	./formats/hfparquet:FuzzRead:4000x \
	./formats/tabular:FuzzRead:50000x \
	./formats/safetensors:FuzzParse:50000x \
	./formats/archive:FuzzExtractTar:20000x \
	./formats/archive:FuzzExtractZip:20000x \
	./formats/archive:FuzzTarFS:5000x \
	./formats/torchpt:FuzzRebuildTensor:50000x \
	./formats/imagefolder:FuzzRead:20000x \
	./formats/imagedec:FuzzDecode:20000x \
	./formats/torchpt:FuzzRead:20000x \
	./text/cliptok:FuzzEncode:40000x

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$$(echo $$t | cut -d: -f1); fn=$$(echo $$t | cut -d: -f2); \
		ft=$$(echo $$t | cut -d: -f3); [ -n "$(FUZZTIME)" ] && ft=$(FUZZTIME); \
		echo "fuzz $$pkg $$fn ($$ft)"; \
		$(GO) test -tags "$(TAGS)" -run='^$$' -fuzz="^$$fn$$" -fuzztime=$$ft $$pkg || exit 1; \
	done

# The peers bench compares with: Debian's PyTorch (training, EEVEE) and
# Snakemake (pipeline overhead). Without them the ratios are not printed.
deps-bench:
	@missing=""; \
	/usr/bin/python3 -c "import torch" 2>/dev/null || missing="$$missing python3-torch"; \
	/usr/bin/python3 -c "import torchvision" 2>/dev/null || missing="$$missing python3-torchvision"; \
	command -v snakemake >/dev/null || missing="$$missing snakemake"; \
	command -v ffmpeg >/dev/null || missing="$$missing ffmpeg"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "Installing$$missing (bench's reference peers)..."; \
			sh scripts/apt-install.sh $$missing >/dev/null || \
				echo "could not install$$missing: those comparisons are skipped"; \
		else \
			echo "bench compares with$$missing; install them (apt-get install$$missing) for the ratios"; \
		fi; \
	fi

bench: deps-blas deps-bench deps-demo
	$(GO) test -tags "$(TAGS)" -run='^$$' -bench=. -benchmem -benchtime=1x -count=1 -timeout 240m ./engine/... ./cmd/gatepipe/ ./eevee/ ./report/ ./train/ ./pmf/ ./formats/hfparquet/ ./formats/imagedec/ ./nodes/torchrt/
	@# EEVEE's evidence on the paper's matrix (minutes each; make test skips them).
	GATEPIPE_LONG_TESTS=1 $(GO) test -count=1 -timeout 60m -v -run 'TestPublishedSubsetsRankNearTop|TestBestK8OverlapsPublished|TestRankingsFollowThePaper' ./eevee/
	@# A Go ResNet-50 at 224 px interrupted mid-step (9.5 GB): the apply ends within 10 s.
	GATEPIPE_LONG_TESTS=1 $(GO) test -tags "$(TAGS)" -count=1 -timeout 20m -v -run 'TestSIGINTStopsAGoResNet50StepWithin10s' ./cmd/gatepipe/

# The GPU check (scripts/gpu-check.sh): here, with Go, it builds the test
# binaries into .gpu-check/ and runs every step (on CPU torch without a
# GPU: "no GPU: CUDA parts skipped"); GPU_CHECK_OUT is where the logs and
# gpu-check.md go. gpu-pack packs the same binaries for a GPU machine
# without Go (../shared/gpu/pack.sh, then xz); there: source
# scripts/gpu-unpack.sh && bash scripts/gpu-check.sh OUTDIR.
GPU_CHECK_PKGS := ./cmd/gatepipe ./nodes/features ./nodes/probenode ./nodes/episodesnode ./nodes/torchrt
GPU_CHECK_OUT ?= gpu-check-out

gpu-check: deps-blas deps-test
	@mkdir -p .gpu-check
	$(GO) build -tags "$(TAGS)" -o .gpu-check/gatepipe ./cmd/gatepipe
	@for p in $(GPU_CHECK_PKGS); do \
		n=$$(echo $$p | tr '/.' '__' | sed 's/^_*//'); \
		echo "go test -c $$p"; $(GO) test -c -tags "$(TAGS)" -o .gpu-check/$$n.test $$p || exit 1; \
	done
	GATEPIPE_TEST_BIN=$(CURDIR)/.gpu-check bash scripts/gpu-check.sh $(GPU_CHECK_OUT)

# The bundle is recompressed with xz (gzip's is over the 64 MiB a device
# call carries); scripts/gpu-unpack.sh unpacks it there.
gpu-pack:
	../shared/gpu/pack.sh $(GPU_CHECK_PKGS)
	cd .gpu && for f in *.gz; do gunzip -c $$f | xz -9 -T0 >$${f%.gz}.xz && rm $$f; done
	rm -f .gpu/unpack.sh
	@du -sh .gpu; echo 'then, on the GPU machine: source scripts/gpu-unpack.sh && bash scripts/gpu-check.sh OUTDIR'

clean:
	rm -rf bin .gpu-check
