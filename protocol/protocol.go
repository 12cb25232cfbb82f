// Package protocol reads GATE's evaluation protocol, the one table of
// data (stdlib/data/gate_protocol.json) that says, for each task family
// and benchmark, which task adapter GATE's code trained, with which text
// tower, loss, matrix metric, checkpoint selection, image size, batch and
// few-shot episodes. Plan and export show it as each train node's
// protocol card, the torch worker builds the adapters it names, and SPEC
// §5.9 lists it.
package protocol

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// TablePath is the table's path in the standard library.
const TablePath = "data/gate_protocol.json"

// The protocols: Table3 is what produced Table 3, GATE's code with its
// defects (the tiers' default); GATE is GATE's design, the defects
// mended.
const (
	Table3 = "table3"
	GATE   = "gate"
)

// Head is a task adapter and its sizes (0: the adapter has no such size).
type Head struct {
	Name       string `json:"name"`
	Blocks     int    `json:"blocks,omitempty"`
	Width      int    `json:"width,omitempty"`
	Heads      int    `json:"heads,omitempty"`
	Projection int    `json:"projection,omitempty"`
	// BlocksApplied false: GATE's code builds and runs the blocks but
	// reads the features from before them (its segmentation decoder),
	// so they change nothing and gatepipe does not build them.
	BlocksApplied *bool `json:"blocks_applied,omitempty"`
}

// TextTower is the text transformer's sizes: CLIP ViT-B/16's (width 512,
// 12 layers, 8 heads) with its pretrained weights at full scale; a
// capped scale's smaller tower starts from the seed (mechanics only).
type TextTower struct {
	Width      int  `json:"width"`
	Layers     int  `json:"layers"`
	Heads      int  `json:"heads"`
	Pretrained bool `json:"pretrained"`
}

// Optimizer is GATE's optimiser as its code applied it.
type Optimizer struct {
	Name        string     `json:"name"`
	Betas       [2]float64 `json:"betas"`
	Eps         float64    `json:"eps"`
	WeightDecay float64    `json:"weight_decay"`
	// NoDecay names the parameters weight decay skips ("bias", "norm").
	NoDecay []string `json:"no_decay,omitempty"`
}

// Schedule is GATE's learning-rate schedule: a plateau scheduler stepped
// Every "step" On the "train_loss".
type Schedule struct {
	Name      string  `json:"name"`
	On        string  `json:"on"`
	Every     string  `json:"every"`
	Factor    float64 `json:"factor"`
	Patience  int     `json:"patience"`
	Threshold float64 `json:"threshold"`
}

// Recipe is GATE's training recipe for a card's encoder and task: the
// learning rate of the encoder's family (transformer, convnext_resnext
// or conv; Family), the decoder's multiple of it, the optimiser, schedule,
// iterations, validation cadence, precision and checkpoint ensemble.
type Recipe struct {
	LR                  float64   `json:"lr"`
	Family              string    `json:"lr_family"`
	DecoderLRMultiplier float64   `json:"decoder_lr_multiplier,omitempty"`
	Optimizer           Optimizer `json:"optimizer"`
	Schedule            Schedule  `json:"schedule"`
	Iterations          int       `json:"iterations"`
	EvalEvery           int       `json:"eval_every"`
	Precision           string    `json:"precision"`
	Ensemble            string    `json:"ensemble"`
}

// recipeTable is the table's recipe section.
type recipeTable struct {
	LR                  map[string]float64 `json:"lr"`
	LRDense             map[string]float64 `json:"lr_dense"`
	DecoderLRMultiplier float64            `json:"decoder_lr_multiplier"`
	Optimizer           Optimizer          `json:"optimizer"`
	Schedule            Schedule           `json:"schedule"`
	Iterations          int                `json:"iterations"`
	EvalEvery           int                `json:"eval_every"`
	Precision           string             `json:"precision"`
	Ensemble            string             `json:"ensemble"`
	GATEFiles           []string           `json:"gate_files"`
}

// Families are the encoder families GATE's learning rates follow.
var Families = []string{"transformer", "convnext_resnext", "conv"}

// Selection is the validation metric checkpoints are ranked by.
type Selection struct {
	Metric    string `json:"metric"`
	Direction string `json:"direction"` // "max" or "min"
	// GATEDirection is the direction of the metric GATE's code selected
	// by where it was another (ACDC: its Dice loss, "min"), which decides
	// its ensemble's checkpoints (D1).
	GATEDirection string `json:"gate_direction,omitempty"`
}

// Episodes is GATE's few-shot episode sampling: ways drawn from Ways
// (inclusive), shots up to MaxShots within SupportBudget support images,
// at most MaxQueries queries a class; Val and Test episodes.
type Episodes struct {
	Ways          [2]int `json:"ways"`
	MaxShots      int    `json:"max_shots,omitempty"`
	SupportBudget int    `json:"support_budget,omitempty"`
	MaxQueries    int    `json:"max_queries,omitempty"`
	Val           int    `json:"val"`
	Test          int    `json:"test"`
}

// Card is one train node's protocol: what GATE's code ran for its
// benchmark, at its scale.
type Card struct {
	Name    string `json:"name"`
	Adapter string `json:"adapter"`
	Head    Head   `json:"head"`
	// Stem is the input stem before the encoder ("instance_norm").
	Stem string `json:"stem,omitempty"`
	// TextEncoder is the Hub id of the text tower, or nil; Text its
	// sizes.
	TextEncoder *string    `json:"text_encoder"`
	Text        *TextTower `json:"text,omitempty"`
	Loss        string     `json:"loss"`
	// Augmentation is GATE's training augmentation ("" for none).
	Augmentation string    `json:"augmentation,omitempty"`
	Metric       string    `json:"metric"`
	Selection    Selection `json:"selection"`
	// IgnoreLabel is the mask label the metrics and losses ignore (nil:
	// none).
	IgnoreLabel *int      `json:"ignore_label,omitempty"`
	ImageSize   []int     `json:"image_size,omitempty"`
	LabelSize   []int     `json:"label_size,omitempty"`
	BatchSize   int       `json:"batch_size,omitempty"`
	Episodes    *Episodes `json:"episodes,omitempty"`
	Scale       string    `json:"scale"`
	// Defects are GATE's code's defects the protocol reproduces (table3:
	// D1, D2, D7; gate: none).
	Defects []string `json:"defects"`
	// Recipe is GATE's recipe for the encoder's family (nil when the
	// family is not known).
	Recipe    *Recipe  `json:"recipe,omitempty"`
	GATEFiles []string `json:"gate_files,omitempty"`
	// NotYet lists the parts of GATE's protocol above that gatepipe does
	// not run yet, and what runs instead.
	NotYet []string `json:"not_yet,omitempty"`
	// Differs lists the recipe values this node runs with where they are
	// not GATE's (a capped scale, a recipe's own lr...), GATE's beside
	// them; the card's values are the ones that run.
	Differs []string `json:"differs,omitempty"`
	// precision is a benchmark's own precision (ACDC's fp16), for the
	// recipe.
	precision string
}

// entry is a table row: any field may be left out (a benchmark's and a
// scale's rows override the family's).
type entry struct {
	Head         *Head      `json:"head"`
	Stem         *string    `json:"stem"`
	TextEncoder  *string    `json:"text_encoder"`
	Text         *TextTower `json:"text"`
	Loss         *string    `json:"loss"`
	Augmentation *string    `json:"augmentation"`
	Metric       *string    `json:"metric"`
	Selection    *Selection `json:"selection"`
	IgnoreLabel  *int       `json:"ignore_label"`
	ImageSize    []int      `json:"image_size"`
	LabelSize    []int      `json:"label_size"`
	BatchSize    *int       `json:"batch_size"`
	Precision    *string    `json:"precision"`
	Episodes     *episodes  `json:"episodes"`
	GATEFiles    []string   `json:"gate_files"`
	NotYet       []string   `json:"not_yet"`
}

type episodes struct {
	Ways          *[2]int `json:"ways"`
	MaxShots      *int    `json:"max_shots"`
	SupportBudget *int    `json:"support_budget"`
	MaxQueries    *int    `json:"max_queries"`
	Val           *int    `json:"val"`
	Test          *int    `json:"test"`
}

// Table is the protocol table.
type Table struct {
	GATECommit string `json:"gate_commit"`
	Protocols  map[string]struct {
		Defects []string `json:"defects"`
	} `json:"protocols"`
	Defects map[string]struct {
		What      string   `json:"what"`
		GATEFiles []string `json:"gate_files"`
	} `json:"defects"`
	Recipe     recipeTable      `json:"recipe"`
	NotYet     []string         `json:"not_yet"`
	Adapters   map[string]entry `json:"adapters"`
	Benchmarks map[string]entry `json:"benchmarks"`
	Scales     map[string]entry `json:"scales"`
}

// Load reads the table from the standard library's files.
func Load(stdlib fs.FS) (*Table, error) {
	b, err := fs.ReadFile(stdlib, TablePath)
	if err != nil {
		return nil, fmt.Errorf("GATE protocol table: %w", err)
	}
	return Parse(b)
}

// Parse reads a table and checks that every family's row is complete.
func Parse(b []byte) (*Table, error) {
	var t Table
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&struct {
		About string `json:"about"`
		*Table
	}{Table: &t}); err != nil {
		return nil, fmt.Errorf("%s: %w", TablePath, err)
	}
	for _, name := range t.Families() {
		e := t.Adapters[name]
		switch {
		case e.Head == nil || e.Head.Name == "":
			return nil, fmt.Errorf("%s: adapter %q has no head", TablePath, name)
		case e.Loss == nil || e.Metric == nil || e.Selection == nil:
			return nil, fmt.Errorf("%s: adapter %q needs loss, metric and selection", TablePath, name)
		case len(e.ImageSize) != 2:
			return nil, fmt.Errorf("%s: adapter %q needs image_size [h, w]", TablePath, name)
		}
	}
	return &t, nil
}

// Families lists the task families the table covers, sorted.
func (t *Table) Families() []string { return slices.Sorted(maps.Keys(t.Adapters)) }

// ScaleNames lists the scales the table sizes adapters for, sorted.
func (t *Table) ScaleNames() []string { return slices.Sorted(maps.Keys(t.Scales)) }

// Card is the protocol of a train node of family adapter on benchmark
// (may be "": the family's) at scale ("": full). A capped scale's card
// keeps GATE's adapters at its reduced sizes and leaves the image size
// to the data.
func (t *Table) Card(name, adapter, benchmark, scale string) (Card, error) {
	proto, ok := t.Protocols[name]
	if !ok {
		return Card{}, fmt.Errorf("no protocol %q (table3: what produced Table 3, GATE's code with its defects; gate: GATE's design, mended)", name)
	}
	fam, ok := t.Adapters[adapter]
	if !ok {
		return Card{}, fmt.Errorf("GATE's protocol has no %q adapter (it has %s)", adapter, strings.Join(t.Families(), ", "))
	}
	if scale == "" {
		scale = "full"
	}
	sc, ok := t.Scales[scale]
	if !ok {
		return Card{}, fmt.Errorf("GATE's protocol has no scale %q (it has %s)", scale, strings.Join(t.ScaleNames(), ", "))
	}
	c := Card{Name: name, Adapter: adapter, Scale: scale, Defects: append([]string{}, proto.Defects...)}
	for _, d := range proto.Defects {
		c.GATEFiles = append(c.GATEFiles, t.Defects[d].GATEFiles...)
	}
	c.NotYet = append(c.NotYet, t.NotYet...)
	c.apply(fam)
	if b, ok := t.Benchmarks[benchmark]; ok {
		c.apply(b)
	}
	c.apply(sc)
	if scale != "full" {
		c.ImageSize, c.LabelSize = nil, nil
	}
	return c, nil
}

// WithRecipe sets c's recipe for an encoder of family (one of Families):
// GATE's learning rate for it (its dense rate on segmentation), the
// decoder's multiple on segmentation, and the rest of GATE's recipe.
func (t *Table) WithRecipe(c *Card, family string) error {
	r := t.Recipe
	lr, ok := r.LR[family]
	if !ok {
		return fmt.Errorf("GATE's protocol has no encoder family %q (it has %s)", family, strings.Join(Families, ", "))
	}
	rec := &Recipe{Family: family, LR: lr, Optimizer: r.Optimizer, Schedule: r.Schedule, Iterations: r.Iterations,
		EvalEvery: r.EvalEvery, Precision: r.Precision, Ensemble: r.Ensemble}
	if c.Adapter == "segmentation" {
		if d, ok := r.LRDense[family]; ok {
			rec.LR = d
		}
		rec.DecoderLRMultiplier = r.DecoderLRMultiplier
	}
	if c.precision != "" {
		rec.Precision = c.precision
	}
	if !c.Has("D2") { // GATE's intended decay: 0.01 but on biases and norms
		rec.Optimizer.WeightDecay, rec.Optimizer.NoDecay = 0.01, []string{"bias", "norm"}
	}
	c.Recipe = rec
	c.GATEFiles = append(c.GATEFiles, r.GATEFiles...)
	return nil
}

// apply sets the fields e gives.
func (c *Card) apply(e entry) {
	if e.Head != nil {
		c.Head = mergeHead(c.Head, *e.Head)
	}
	set(&c.Stem, e.Stem)
	if e.TextEncoder != nil {
		c.TextEncoder = new(*e.TextEncoder)
	}
	if e.Text != nil && (c.Text != nil || c.TextEncoder != nil) {
		c.Text = new(*e.Text)
	}
	set(&c.Loss, e.Loss)
	set(&c.Augmentation, e.Augmentation)
	set(&c.Metric, e.Metric)
	set(&c.Selection, e.Selection)
	if e.IgnoreLabel != nil {
		c.IgnoreLabel = new(*e.IgnoreLabel)
	}
	if e.ImageSize != nil {
		c.ImageSize = slices.Clone(e.ImageSize)
	}
	if e.LabelSize != nil {
		c.LabelSize = slices.Clone(e.LabelSize)
	}
	set(&c.BatchSize, e.BatchSize)
	set(&c.precision, e.Precision)
	if e.Episodes != nil && (c.Episodes != nil || c.Adapter == "fewshot") {
		if c.Episodes == nil {
			c.Episodes = &Episodes{}
		}
		ep := c.Episodes
		set(&ep.Ways, e.Episodes.Ways)
		set(&ep.MaxShots, e.Episodes.MaxShots)
		set(&ep.SupportBudget, e.Episodes.SupportBudget)
		set(&ep.MaxQueries, e.Episodes.MaxQueries)
		set(&ep.Val, e.Episodes.Val)
		set(&ep.Test, e.Episodes.Test)
	}
	c.GATEFiles = append(c.GATEFiles, e.GATEFiles...)
	c.NotYet = append(c.NotYet, e.NotYet...)
}

// mergeHead overrides h's sizes with o's non-zero ones: a benchmark's or
// a scale's row sizes only the sizes the family's adapter has; a row
// naming another adapter replaces it.
func mergeHead(h, o Head) Head {
	if o.Name != "" && o.Name != h.Name {
		return o
	}
	h.Override(o.Blocks, o.Width, o.Heads, o.Projection)
	return h
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Override sets the sizes given (0: keep) that the adapter has.
func (h *Head) Override(blocks, width, heads, projection int) {
	for _, o := range []struct {
		dst *int
		v   int
	}{{&h.Blocks, blocks}, {&h.Width, width}, {&h.Heads, heads}, {&h.Projection, projection}} {
		if o.v > 0 && *o.dst > 0 {
			*o.dst = o.v
		}
	}
}

// RunsWith sets the recipe values the node runs with (0: the adapter
// has no batch, as few-shot episodes), noting each that is not GATE's in
// Differs.
func (c *Card) RunsWith(lr, weightDecay float64, batch, iterations, evalEvery, topK int) {
	r := c.Recipe
	if r == nil {
		return
	}
	differ := func(name string, runs, gate any) {
		if fmt.Sprint(runs) != fmt.Sprint(gate) {
			c.Differs = append(c.Differs, fmt.Sprintf("%s %v (GATE's %v)", name, runs, gate))
		}
	}
	differ("lr", lr, r.LR)
	differ("weight decay", weightDecay, r.Optimizer.WeightDecay)
	if batch > 0 {
		differ("batch", batch, c.BatchSize)
		c.BatchSize = batch
	}
	differ("iterations", iterations, r.Iterations)
	differ("eval every", evalEvery, r.EvalEvery)
	ensemble := fmt.Sprintf("top-%d", max(topK, 1))
	differ("ensemble", ensemble, r.Ensemble)
	r.LR, r.Optimizer.WeightDecay, r.Iterations, r.EvalEvery, r.Ensemble = lr, weightDecay, iterations, evalEvery, ensemble
}

// Has reports whether the card reproduces GATE's defect d ("D1"...).
func (c Card) Has(d string) bool { return slices.Contains(c.Defects, d) }

// Words describes the card in one line, as plan prints it.
func (c Card) Words() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s head", strings.ReplaceAll(c.Head.Name, "_", " "))
	var sizes []string
	if c.Head.Blocks > 0 {
		applied := ""
		if c.Head.BlocksApplied != nil && !*c.Head.BlocksApplied {
			applied = " (computed by GATE but not applied)"
		}
		sizes = append(sizes, fmt.Sprintf("%d blocks%s", c.Head.Blocks, applied))
	}
	if c.Head.Width > 0 {
		sizes = append(sizes, fmt.Sprintf("width %d", c.Head.Width))
	}
	if c.Head.Heads > 0 {
		sizes = append(sizes, fmt.Sprintf("%d heads", c.Head.Heads))
	}
	if c.Head.Projection > 0 {
		sizes = append(sizes, fmt.Sprintf("on a %d-d projection", c.Head.Projection))
	}
	if len(sizes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(sizes, ", "))
	}
	if c.TextEncoder != nil {
		fmt.Fprintf(&b, ", text %s", *c.TextEncoder)
		if c.Text != nil && !c.Text.Pretrained {
			fmt.Fprintf(&b, " (its tokenizer; a %d-layer width-%d tower from the seed)", c.Text.Layers, c.Text.Width)
		}
	}
	fmt.Fprintf(&b, ", %s loss", strings.ReplaceAll(c.Loss, "_", " "))
	if len(c.ImageSize) == 2 {
		fmt.Fprintf(&b, ", %dx%d px", c.ImageSize[0], c.ImageSize[1])
	}
	if c.BatchSize > 0 {
		fmt.Fprintf(&b, ", batch %d", c.BatchSize)
	}
	if c.Augmentation != "" {
		fmt.Fprintf(&b, ", augmentation %s", c.Augmentation)
	}
	fmt.Fprintf(&b, "; %s (selected by %s, %s)", c.Metric, c.Selection.Metric, c.Selection.Direction)
	if e := c.Episodes; e != nil {
		fmt.Fprintf(&b, "; episodes of %d-%d ways, %d val, %d test", e.Ways[0], e.Ways[1], e.Val, e.Test)
	}
	if c.Scale != "full" {
		fmt.Fprintf(&b, " [%s sizes]", c.Scale)
	}
	if r := c.Recipe; r != nil {
		fmt.Fprintf(&b, "; lr %g (%s)", r.LR, strings.ReplaceAll(r.Family, "_", "/"))
		if r.DecoderLRMultiplier > 0 {
			fmt.Fprintf(&b, ", decoder x%g", r.DecoderLRMultiplier)
		}
		fmt.Fprintf(&b, ", AdamW (%g, %g) eps %g wd %g, plateau on the %s every %s (patience %d), eval every %d, %s",
			r.Optimizer.Betas[0], r.Optimizer.Betas[1], r.Optimizer.Eps, r.Optimizer.WeightDecay,
			strings.ReplaceAll(r.Schedule.On, "_", " "), r.Schedule.Every, r.Schedule.Patience, r.EvalEvery, r.Precision)
	}
	if len(c.Differs) > 0 {
		fmt.Fprintf(&b, "; runs %s", strings.Join(c.Differs, ", "))
	}
	if len(c.NotYet) > 0 {
		fmt.Fprintf(&b, "; not yet as GATE: %s", strings.Join(c.NotYet, "; "))
	}
	if len(c.Defects) > 0 {
		fmt.Fprintf(&b, "; GATE's defects %s reproduced", strings.Join(c.Defects, ", "))
	}
	return b.String()
}
