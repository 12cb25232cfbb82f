package nodes

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// Kind is one block type.
type Kind interface {
	// Name is the block type, e.g. "dataset".
	Name() string
	// Version changes whenever the kind's outputs for an unchanged
	// configuration would change; it is part of every action ID.
	Version() string
	// Spec is the schema of the block body, meta-arguments excluded.
	Spec() hcldec.Spec
	// OutputType is the type of the value other blocks see when they
	// reference this block; it must be an object type.
	OutputType() cty.Type
	// Decode validates an evaluated configuration (conforming to Spec,
	// wholly known) and returns the node to run.
	Decode(cfg cty.Value, decl Decl) (Node, hcl.Diagnostics)
}

// PartialChecker is a Kind that can check a configuration that is not
// wholly known yet, as at validate and plan time when it references
// blocks that have not run: the references' types are known, so a
// reference to the wrong kind of block is caught before apply.
type PartialChecker interface {
	CheckPartial(cfg cty.Value, decl Decl) hcl.Diagnostics
}

// Planner is a kind whose value is known, wholly or in part, before its
// node runs: a configuration block that echoes its attributes. Plan hands
// that value to the blocks that reference it, so that they are decoded,
// sized and costed (their runtime, their time) while they wait. cfg may be
// partly unknown; node is the decoded node when cfg is wholly known (else
// nil). The value must conform to OutputType, with unknowns where it
// cannot be told; it must equal what Run returns where it is known.
type Planner interface {
	PlannedValue(cfg cty.Value, node Node, decl Decl) cty.Value
}

// Decl is what a kind knows about the block it decodes, for diagnostics
// and relative paths.
type Decl struct {
	Addr      addrs.AbsInstance
	Body      hcl.Body
	DeclRange hcl.Range
	// Dir is the module directory that relative paths resolve against.
	Dir string
	// Reads records the local files a kind reads while decoding (nil
	// records nothing); see package readset.
	Reads *readset.Set
	// Sources, when set, resolves remote files a kind must read while
	// decoding (a Hub model's config.json): from the lock, the caches, and
	// the network only where the command resolves sources (apply, fetch).
	Sources *sources.Resolver
	// Defaults are the pipeline's defaults for blocks that leave an
	// attribute unset (the gatepipe block's settings).
	Defaults Defaults
}

// Defaults are pipeline-wide defaults of block attributes.
type Defaults struct {
	// Runtime is the runtime of encoder-backed blocks ("auto", "go" or
	// "torch"; empty: "auto"), Python the torch runtime's interpreter
	// (empty: $GATEPIPE_PYTHON, else python3).
	Runtime, Python string
	// Machine answers what runtime = "auto" asks of this machine; nil is
	// a machine without GPUs.
	Machine Machine
}

// Machine is what runtime = "auto" needs to know about the machine the
// pipeline runs on.
type Machine interface {
	// Accelerate says whether python (its interpreter, "" for the
	// default) can run the torch runtime on this machine's GPUs.
	Accelerate(python string) Acceleration
}

// EncoderCheck is one run of a researcher's own encoder (arch
// "python:PATH:CALLABLE") on a fake batch, as plan makes it.
type EncoderCheck struct {
	// Arch is "python:/abs/path.py:CALLABLE"; Args its keyword arguments
	// (JSON); Code the SHA-256 of the file and its declared inputs, so
	// that an edited file is checked again; Shape one example [C, H, W].
	Arch, Args, Code string
	Shape            []int
}

// EncoderResult is what the check found: the pooled features' width
// and the raw features' map shape [C, h, w] (nil when there are none),
// or Error, the Python error's type, message and line.
type EncoderResult struct {
	Width int    `json:"width"`
	Raw   []int  `json:"raw,omitempty"`
	Error string `json:"error,omitempty"`
}

// EncoderChecker is a Machine that can build a researcher's own encoder
// with python ("" for the default interpreter) and run it on one fake
// batch.
type EncoderChecker interface {
	CheckEncoder(python string, c EncoderCheck) EncoderResult
}

// Acceleration is a Machine's answer for one interpreter.
type Acceleration struct {
	// GPUs is how many GPUs the scheduler has, and Torch whether the
	// interpreter imports torch with CUDA available.
	GPUs  int
	Torch bool
	// CPUsPerGPU is the CPU cores a node on one GPU gets to feed it.
	CPUsPerGPU int
	// Why says, in one line, what was found.
	Why string
}

// UseGPUs reports whether the torch runtime on one GPU per node is
// the machine's best choice.
func (a Acceleration) UseGPUs() bool { return a.GPUs > 0 && a.Torch }

// AttrRange returns the source range of attribute name in the block body,
// or the block's range when the attribute is absent.
func (d Decl) AttrRange(name string) *hcl.Range {
	if d.Body != nil {
		if attrs, diags := d.Body.JustAttributes(); !diags.HasErrors() {
			if a, ok := attrs[name]; ok {
				return a.Expr.Range().Ptr()
			}
		}
		if r := attrRangeSyntax(d.Body, name); r != nil {
			return r
		}
	}
	return d.DeclRange.Ptr()
}

// Errorf returns an error diagnostic about attribute attr.
func (d Decl) Errorf(attr, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  d.AttrRange(attr),
		Context:  d.DeclRange.Ptr(),
	}
}

// Node is one decoded, runnable block instance.
type Node interface {
	// Fingerprint writes to w everything besides the evaluated
	// configuration that determines the output, such as the contents of
	// local input files. It must be cheap enough to run at every plan,
	// and must record every file or directory it reads with
	// readset.Add(ctx, path) before reading it: an apply of an unchanged
	// pipeline is answered from those stamps without planning.
	Fingerprint(ctx context.Context, w io.Writer) error
	// Run does the work. It writes output files under env.OutDir and
	// returns the block's value, conforming to the kind's OutputType.
	// Paths inside env.OutDir may appear in the value; the engine
	// rewrites them to the final cache location.
	Run(ctx context.Context, env *Env) (cty.Value, error)
}

// Isolated is implemented by kinds whose nodes should run in their own
// process by default (heavy numeric work), so a crash or an out-of-memory
// kill takes down only that node.
type Isolated interface {
	IsolatedProcess() bool
}

// Experimenter is implemented by kinds whose instances may evaluate one
// model on one benchmark (`apply -budget` chooses among them).
// ExperimentCell reads the cell from an instance's configuration, which may
// be partly unknown (or cty.NilVal) before its dependencies ran:
// experiment is false when the instance is certainly not an experiment,
// known whether model and benchmark are.
type Experimenter interface {
	ExperimentCell(config cty.Value) (model, benchmark string, known, experiment bool)
}

// KnownString returns the string at path in v (attribute names), and
// whether it is there, known and not null.
func KnownString(v cty.Value, path ...string) (string, bool) {
	for _, name := range path {
		if v.IsNull() || !v.IsKnown() || !(v.Type().IsObjectType() && v.Type().HasAttribute(name) || v.Type().IsMapType()) {
			return "", false
		}
		if v.Type().IsMapType() {
			if !v.HasIndex(cty.StringVal(name)).True() {
				return "", false
			}
			v = v.Index(cty.StringVal(name))
		} else {
			v = v.GetAttr(name)
		}
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// Downloader is a node that downloads remote sources. The engine pins
// them (declared checksum, lock file, or resolution at apply) and hashes
// the pins into the node's action ID, so a refreshed pin re-runs it.
type Downloader interface {
	Downloads() []sources.Ref
}

// Extractor is a Downloader that unpacks some of its sources' files into
// a temporary directory while it runs (archives it cannot read in place):
// plan counts their size again for the disk's peak.
type Extractor interface {
	// Extracts reports whether the file at path of ref's files is
	// unpacked.
	Extracts(ref sources.Ref, path string) bool
}

// LocalCopier is a node that copies local source files into the blob
// store as it runs: plan counts them on the cache's disk as it counts
// downloads.
type LocalCopier interface {
	// LocalCopies lists those files, known once the node is planned.
	LocalCopies() []LocalCopy
}

// LocalCopy is a local source file a node copies into the blob store.
type LocalCopy struct {
	Path string
	Size int64
	// SHA256 is the file's hash (hex), "" when not known before the run.
	SHA256 string
	// Extracts: the node also unpacks it into a temporary directory.
	Extracts bool
}

// StoreEstimator is a node that can say before it runs how large its
// output will be and how much memory it expects to need (`plan` prints
// it, so a researcher knows the cost before paying it).
type StoreEstimator interface {
	EstimateStore() StoreEstimate
}

// StoreEstimate is a node's expected output.
type StoreEstimate struct {
	// Examples is the number of examples, Known false when the node
	// cannot tell (the source's size is unknown until it is read).
	Examples int64
	Known    bool
	// Shape and DType describe one example.
	Shape []int
	DType string
	// Bytes is the store's expected size on disk; PeakMemory the node's
	// expected peak resident memory.
	Bytes, PeakMemory int64
	// Basis says where the example count comes from.
	Basis string
	// Splits are the examples of each split where known; SplitCaps the
	// limits (max_train, max_val, max_test) of those that are capped.
	Splits, SplitCaps map[string]int64
	// JPEGQuality, above 0, says the images are stored as JPEGs of that
	// quality and decoded as they are read (a cost of every pass).
	JPEGQuality int
}

// PlanDecoder is a kind whose Decode also reads a configuration that
// still waits on upstream values, with those values as nulls: plan
// decodes such a block to say which runtime it gets and how long it takes
// (that node never runs).
type PlanDecoder interface {
	DecodesWaiting() bool
}

// WorkEstimator is a node that can tell before it runs how much compute
// it will do, and how to time that compute on this machine, so that plan
// prints how long it should take. data is the estimate of the dataset it
// reads (its upstream dataset's store: shape and split sizes as far as
// they are known).
type WorkEstimator interface {
	EstimateWork(data StoreEstimate) Work
}

// Work is a node's compute, counted in examples through its model.
type Work struct {
	// Train counts examples through a training step (forward and
	// backward), Eval through the model's forward pass alone, per seed;
	// Passes how many evaluation passes there are (each costs Rate.Pass
	// whatever its size); Runs is how many times that is done (seeds).
	Train, Eval, Passes int64
	Runs                int
	// Partial says what the counts leave out ("" when they are whole),
	// e.g. the validation passes of a split whose size is unknown.
	Partial string
	// Key names everything the speed depends on but the devices
	// (runtime, model, example shape, batch, precision); Measure times the
	// model on this machine on env's devices, with env.OutDir for scratch
	// files (nil: nothing here can time it).
	Key     string
	Measure func(ctx context.Context, env *Env) (Rate, error)
	// Label is Key as a person reads it, e.g. "resnet50 train (torch
	// runtime) at 3x224x224".
	Label string
}

// WorkLabel is a Work's Label: the model, the block kind, the runtime and
// the example shape.
func WorkLabel(arch, kind, runtime string, shape []int) string {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s (%s runtime) at %s", arch, kind, runtime, strings.Join(dims, "x")))
}

// Rate is how fast a model runs here: the time of one example through a
// training step and through a forward pass, of an evaluation pass beyond
// its examples, and the fixed cost of a run (building the model, writing
// its results).
type Rate struct {
	Train, Eval, Pass, Fixed time.Duration
}

// Time is how long w takes at r.
func (r Rate) Time(w Work) time.Duration {
	runs := max(w.Runs, 1)
	per := r.Fixed + time.Duration(w.Train)*r.Train + time.Duration(w.Eval)*r.Eval + time.Duration(w.Passes)*r.Pass
	return time.Duration(runs) * per
}

// Resumer is a node that can go on from where an interrupted run of it
// stopped (training checkpoints). The engine gives it Env.ResumeDir.
type Resumer interface {
	Resumes() bool
}

// ProtocolCarrier is a node that trains under a named evaluation
// protocol (GATE's adapters): Protocol is its card for export (nil: none)
// and ProtocolWords the card in words for plan ("" for none).
type ProtocolCarrier interface {
	Protocol() any
	ProtocolWords() string
}

// RuntimeChooser is a node that runs on one of the runtimes (runtime =
// "go", "torch" or "auto"): plan says which it got, and auto's reason.
type RuntimeChooser interface {
	RuntimeChoice() (runtime string, auto *Acceleration)
}

// ResourceDefaulter is implemented by nodes that need more than one CPU
// slot when the block sets no resources.
type ResourceDefaulter interface {
	DefaultResources() Resources
}

// Resources is what a node asks the scheduler for.
type Resources struct {
	CPUs   int
	GPUs   int
	Memory int64 // bytes; 0 means unspecified
}

// Env is what a running node gets from the engine.
type Env struct {
	// Addr is the instance being run.
	Addr addrs.AbsInstance
	// OutDir is an empty directory for the node's output files.
	OutDir string
	// WorkDir is the module directory, for relative paths.
	WorkDir string
	// Blobs stores and finds downloaded files by SHA-256.
	Blobs BlobStore
	// Parts stores parts of a node's work under keys the node derives
	// from their own inputs (one seed of several), so that a run after a
	// change that leaves a part's inputs alone reuses it. Nil when the
	// engine runs without a cache.
	Parts PartStore
	// Sources resolves remote sources (lock file, mirror, credentials,
	// offline mode) and downloads them into Blobs.
	Sources *sources.Resolver
	// Devices are the slots assigned to this run.
	Devices Assignment
	// Log is the node's logger.
	Log zerolog.Logger
	// Progress reports progress of long work; never nil.
	Progress Progress
	// ResumeDir, for a node that is a Resumer, is a directory kept
	// across failed, cancelled and killed runs of this instance (removed
	// once its output is stored): checkpoints go there. What a node reads
	// back from it must match its ActionID, since the directory belongs to
	// the block's address, not to one configuration. Empty otherwise.
	ResumeDir string
	// ActionID identifies this run's inputs in the cache (hex), and
	// Version is the gatepipe version; nodes may record both in their
	// outputs as run metadata.
	ActionID string
	Version  string
}

// Assignment lists the devices a node runs on.
type Assignment struct {
	CPUs int
	// GPUs holds device IDs as given to CUDA_VISIBLE_DEVICES.
	GPUs []string
}

// BlobStore is the content-addressed store of downloaded files, shared by
// every pipeline that uses the cache.
type BlobStore interface {
	// BlobPath returns the path of the blob with the given SHA-256 (hex)
	// and whether it is present and intact (a blob whose content no
	// longer matches its name is never served).
	BlobPath(sha256hex string) (string, bool)
	// LockBlob serialises the fetching of one blob, identified by key,
	// across goroutines and processes.
	LockBlob(ctx context.Context, key string) (unlock func(), err error)
	// PartialPath returns where a partial download for key may be kept
	// across interruptions; hold LockBlob(key) while using it.
	PartialPath(key string) (string, error)
	// AddBlob hashes the finished file at tmpPath, checks it against want
	// (when not empty) and moves it into the store under its SHA-256,
	// returning the blob's path and SHA-256.
	AddBlob(tmpPath, want string) (path, sha256hex string, err error)
	// UseBlob marks the blob as read by the caller until unlock (shared,
	// across processes): DropBlob leaves it alone meanwhile.
	UseBlob(ctx context.Context, sha256hex string) (unlock func(), err error)
	// DropBlob removes the blob unless it is in use or being fetched, and
	// reports whether it did.
	DropBlob(sha256hex string) (bool, error)
}

// PartStore is the cache of node parts: directories of files stored
// under a key. A node derives a part's key from everything that
// determines it (its kind's version included), as the engine derives an
// action ID.
type PartStore interface {
	// Part returns the directory of the part stored under key (read
	// only), and whether there is an intact one.
	Part(key string) (dir string, ok bool)
	// StorePart moves dir (which it consumes) into the cache under key
	// and returns where the part now lies; label says what it is in
	// listings (`cache ls`).
	StorePart(key, label, dir string) (string, error)
}

// Progress receives progress updates from a running node.
type Progress interface {
	// Update reports done out of total units (total 0 when unknown).
	Update(done, total int64, unit string)
}

// NoProgress discards updates.
type NoProgress struct{}

// Update does nothing.
func (NoProgress) Update(int64, int64, string) {}

// Registry holds the kinds known to one program.
type Registry struct {
	kinds map[string]Kind
}

// NewRegistry returns a registry with the given kinds. It panics on a
// duplicate name, which is a programming error.
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{kinds: map[string]Kind{}}
	for _, k := range kinds {
		r.Add(k)
	}
	return r
}

// Add registers k.
func (r *Registry) Add(k Kind) {
	if _, dup := r.kinds[k.Name()]; dup {
		panic(fmt.Sprintf("nodes: kind %q registered twice", k.Name()))
	}
	if !k.OutputType().IsObjectType() {
		panic(fmt.Sprintf("nodes: kind %q output type must be an object", k.Name()))
	}
	r.kinds[k.Name()] = k
}

// Kind returns the kind with the given name.
func (r *Registry) Kind(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names returns the registered kind names, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
