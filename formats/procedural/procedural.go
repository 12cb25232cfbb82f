// Package procedural renders seeded synthetic benchmarks (scenes of
// coloured shapes) so GATE-style task families can be trained and
// evaluated on a CPU without downloads: shape classification, object
// counting (regression, iWildCam-like), colour presence (multi-label,
// medical-style), shape segmentation (a class per pixel), video, relational
// questions, captions, few-shot classes and one-channel sketches (a
// modality shift). The same seed always renders the same pixels.
package procedural

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// Shapes and colours a scene draws from.
var (
	Shapes  = []string{"square", "circle", "triangle"}
	Colours = []string{"red", "green", "blue", "yellow"}
	rgb     = [][3]float64{{220, 40, 40}, {40, 200, 60}, {50, 90, 230}, {230, 210, 40}}
)

// Tasks lists the generators.
var Tasks = []string{"shape", "count", "colours", "segment", "video", "video_count", "relational", "captions", "fewshot", "sketch"}

// Sizes split the few-shot task's classes further.
var Sizes = []string{"small", "large"}

// heldOut says which 8 of the few-shot task's 24 classes ((colour x shape)
// x size, numbered in that order) appear only in the test stream.
func heldOut(class int) bool { return class%3 == 2 }

// Directions are the video task's classes.
var Directions = []string{"left", "right", "up", "down"}

// Config says what to generate.
type Config struct {
	// Task: "shape" (one object; classes are colour x shape), "count" (1 to
	// MaxObjects objects; the target is how many) or "colours" (1 to 4
	// objects; one label per colour present).
	Task string
	// N examples of Size x Size RGB pixels.
	N, Size int
	// MaxObjects bounds the objects per scene (count; default 6).
	MaxObjects int
	// Frames per clip (video; default 4).
	Frames int
	Seed   uint64
	// Stream separates independent sets from one seed (train 0, test 1).
	Stream uint64
}

// Set is a generated set: U8 pixels [N, 3, Size, Size] and targets.
type Set struct {
	Pixels []byte
	Shape  []int // one example: [3, Size, Size], or [Frames, 3, Size, Size]
	// Task kind for the example store: "classification", "regression",
	// "multilabel", "segmentation", "video" (a class per clip),
	// "relational" (an answer class per image and question), "retrieval"
	// (image-caption pairs; Labels are the example numbers) or "fewshot"
	// (a class per image; the test stream's classes never appear in the
	// training stream).
	Task string
	// Labels (classification: one per example; segmentation: one per
	// pixel, N * Size * Size) or Targets (N * Width values).
	Labels  []int64
	Targets []float32
	Width   int
	Classes []string
	// Questions holds QuestionLength tokens per example (relational) or
	// CaptionLength (captions); Vocab names them.
	Questions []int64
}

// Check validates c.
func (c Config) Check() error {
	if !slices.Contains(Tasks, c.Task) {
		return &ConfigError{"task", fmt.Sprintf("generator task %q is not one of %s", c.Task, strings.Join(Tasks, ", "))}
	}
	if c.N < 1 {
		return &ConfigError{"n", fmt.Sprintf("the generator needs at least one example, not %d", c.N)}
	}
	if c.Size < 8 || c.Size > 256 {
		return &ConfigError{"size", fmt.Sprintf("image size %d is outside 8..256", c.Size)}
	}
	if c.MaxObjects < 0 || c.MaxObjects > 20 {
		return &ConfigError{"max_objects", fmt.Sprintf("max_objects %d is outside 1..20", c.MaxObjects)}
	}
	if c.Frames < 0 || c.Frames == 1 || c.Frames > 32 {
		return &ConfigError{"frames", fmt.Sprintf("frames %d is outside 2..32", c.Frames)}
	}
	return nil
}

// ConfigError is an invalid Config field ("task", "n", "size",
// "max_objects" or "frames").
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Msg }

// object is one shape in a scene.
type object struct {
	shape, colour int
	x, y, r       float64
}

// Generate renders the set.
func Generate(c Config) (*Set, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.MaxObjects == 0 {
		c.MaxObjects = 6
	}
	if c.Frames == 0 {
		c.Frames = 4
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5ce7e+c.Stream))
	s := newSet(c)
	s.Pixels = make([]byte, 0, c.N*3*c.Size*c.Size)
	for i := 0; i < c.N; i++ {
		s.add(rng, c, i)
	}
	return s, nil
}

// newSet is the empty set of c's task: its kind, classes, shape.
func newSet(c Config) *Set {
	s := &Set{Shape: []int{3, c.Size, c.Size}}
	switch c.Task {
	case "shape":
		s.Task = "classification"
		for _, col := range Colours {
			for _, sh := range Shapes {
				s.Classes = append(s.Classes, col+" "+sh)
			}
		}
	case "count":
		s.Task, s.Width = "regression", 1
	case "colours":
		s.Task, s.Width, s.Classes = "multilabel", len(Colours), append([]string(nil), Colours...)
	case "segment":
		s.Task, s.Classes = "segmentation", append([]string{"background"}, Shapes...)
	case "relational":
		s.Task, s.Classes = "relational", append([]string(nil), Answers...)
	case "captions":
		s.Task = "retrieval"
	case "sketch":
		s.Task, s.Shape = "classification", []int{1, c.Size, c.Size}
		for _, sz := range Sizes {
			for _, sh := range Shapes {
				s.Classes = append(s.Classes, sz+" "+sh)
			}
		}
	case "fewshot":
		s.Task = "fewshot"
		for _, col := range Colours {
			for _, sh := range Shapes {
				for _, sz := range Sizes {
					s.Classes = append(s.Classes, sz+" "+col+" "+sh)
				}
			}
		}
	case "video":
		s.Task, s.Classes = "video", append([]string(nil), Directions...)
		s.Shape = []int{c.Frames, 3, c.Size, c.Size}
	case "video_count":
		s.Task, s.Width = "video_regression", 1
		s.Shape = []int{c.Frames, 3, c.Size, c.Size}
	}
	return s
}

// add draws example i of c's task into s.
func (s *Set) add(rng *rand.Rand, c Config, i int) {
	var objs []object
	switch c.Task {
	case "shape":
		objs = place(rng, 1, c.Size)
		s.Labels = append(s.Labels, int64(objs[0].colour*len(Shapes)+objs[0].shape))
	case "count":
		objs = place(rng, 1+rng.IntN(c.MaxObjects), c.Size)
		s.Targets = append(s.Targets, float32(len(objs)))
	case "colours":
		objs = place(rng, 1+rng.IntN(4), c.Size)
		present := make([]float32, len(Colours))
		for _, o := range objs {
			present[o.colour] = 1
		}
		s.Targets = append(s.Targets, present...)
	case "segment":
		objs = place(rng, 1+rng.IntN(4), c.Size)
		s.Labels = append(s.Labels, mask(objs, c.Size)...)
	case "relational":
		objs = place(rng, 2+rng.IntN(4), c.Size)
		q, a := question(rng, objs)
		s.Questions = append(s.Questions, q...)
		s.Labels = append(s.Labels, a)
	case "captions":
		objs = place(rng, 1+rng.IntN(3), c.Size)
		s.Questions = append(s.Questions, caption(objs)...)
		s.Labels = append(s.Labels, int64(i))
	case "fewshot":
		// Training streams draw from the 16 seen classes, test streams
		// from the 8 held-out ones.
		var class int
		for {
			class = rng.IntN(len(Colours) * len(Shapes) * len(Sizes))
			if heldOut(class) == (c.Stream == 1) {
				break
			}
		}
		o := object{colour: class / (len(Shapes) * len(Sizes)), shape: class / len(Sizes) % len(Shapes)}
		o.r = float64(c.Size) * []float64{0.09, 0.17}[class%len(Sizes)] * (0.9 + 0.2*rng.Float64())
		o.x = o.r + rng.Float64()*(float64(c.Size)-2*o.r)
		o.y = o.r + rng.Float64()*(float64(c.Size)-2*o.r)
		objs = []object{o}
		s.Labels = append(s.Labels, int64(class))
	case "sketch":
		// A modality shift: one-channel outline drawings, white on
		// black, of a small or large shape, in place of colour scenes.
		sz := rng.IntN(len(Sizes))
		o := object{shape: rng.IntN(len(Shapes))}
		o.r = float64(c.Size) * []float64{0.12, 0.3}[sz] * (0.9 + 0.2*rng.Float64())
		o.x = o.r + rng.Float64()*(float64(c.Size)-2*o.r)
		o.y = o.r + rng.Float64()*(float64(c.Size)-2*o.r)
		s.Labels = append(s.Labels, int64(sz*len(Shapes)+o.shape))
		s.Pixels = append(s.Pixels, sketch(rng, o, c.Size)...)
		return
	case "video_count":
		// A camera-trap sequence: the same animals in every frame,
		// the target their number.
		objs = place(rng, 1+rng.IntN(c.MaxObjects), c.Size)
		s.Targets = append(s.Targets, float32(len(objs)))
		for range c.Frames {
			s.Pixels = append(s.Pixels, render(rng, objs, c.Size)...)
		}
		return
	case "video":
		dir := rng.IntN(len(Directions))
		s.Labels = append(s.Labels, int64(dir))
		s.Pixels = append(s.Pixels, clip(rng, dir, c.Frames, c.Size)...)
		return
	}
	s.Pixels = append(s.Pixels, render(rng, objs, c.Size)...)
}

// place draws n objects at random sizes and positions, keeping them
// apart where it can (a few tries each), so counts stay countable.
func place(rng *rand.Rand, n, size int) []object {
	var objs []object
	for len(objs) < n {
		o := object{shape: rng.IntN(len(Shapes)), colour: rng.IntN(len(Colours))}
		o.r = float64(size) * (0.07 + 0.07*rng.Float64())
		for try := 0; try < 20; try++ {
			o.x = o.r + rng.Float64()*(float64(size)-2*o.r)
			o.y = o.r + rng.Float64()*(float64(size)-2*o.r)
			if !overlaps(o, objs) {
				break
			}
		}
		objs = append(objs, o)
	}
	// Draw larger objects first so small ones stay visible.
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].r > objs[j].r })
	return objs
}

func overlaps(o object, objs []object) bool {
	for _, p := range objs {
		if math.Hypot(o.x-p.x, o.y-p.y) < o.r+p.r+1 {
			return true
		}
	}
	return false
}

// inside reports whether pixel centre (px, py) is in o.
func (o object) inside(px, py float64) bool {
	dx, dy := px-o.x, py-o.y
	switch Shapes[o.shape] {
	case "square":
		return math.Abs(dx) <= o.r*0.85 && math.Abs(dy) <= o.r*0.85
	case "circle":
		return dx*dx+dy*dy <= o.r*o.r
	default: // triangle pointing up
		if dy < -o.r || dy > o.r*0.8 {
			return false
		}
		half := (dy + o.r) / (1.8 * o.r) * o.r
		return math.Abs(dx) <= half
	}
}

// clip renders a moving object (the one whose direction is the label) and
// a static distractor over frames: the mover crosses half the image, its
// whole path inside it.
func clip(rng *rand.Rand, dir, frames, size int) []byte {
	objs := place(rng, 2, size)
	mover := &objs[0]
	unit := [][2]float64{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}[dir] // Directions' order
	span := float64(size) * 0.5
	start := func(u float64) float64 {
		lo := mover.r + math.Max(0, -u)*span
		hi := float64(size) - mover.r - math.Max(0, u)*span
		return lo + rng.Float64()*math.Max(hi-lo, 0)
	}
	mover.x, mover.y = start(unit[0]), start(unit[1])
	step := span / float64(frames-1)
	var out []byte
	for f := 0; f < frames; f++ {
		out = append(out, render(rng, objs, size)...)
		mover.x += unit[0] * step
		mover.y += unit[1] * step
	}
	return out
}

// mask is the per-pixel class of a scene: 0 for background, 1 + the shape
// index of the object drawn on top.
func mask(objs []object, size int) []int64 {
	m := make([]int64, size*size)
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			for _, o := range objs {
				if o.inside(float64(x)+0.5, float64(y)+0.5) {
					m[y*size+x] = int64(1 + o.shape)
				}
			}
		}
	}
	return m
}

// sketch draws o's outline (pixels inside whose 4-neighbourhood leaves the
// shape) on one noisy channel.
func sketch(rng *rand.Rand, o object, size int) []byte {
	img := make([]byte, size*size)
	in := func(x, y int) bool { return o.inside(float64(x)+0.5, float64(y)+0.5) }
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			v := 10.0
			if in(x, y) && (!in(x-1, y) || !in(x+1, y) || !in(x, y-1) || !in(x, y+1)) {
				v = 240
			}
			img[y*size+x] = byte(math.Max(0, math.Min(255, math.Round(v+rng.NormFloat64()*10))))
		}
	}
	return img
}

// render draws objs on a noisy dark background, [3, size, size].
func render(rng *rand.Rand, objs []object, size int) []byte {
	img := make([]byte, 3*size*size)
	plane := size * size
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			c := [3]float64{30, 30, 35}
			for _, o := range objs {
				if o.inside(float64(x)+0.5, float64(y)+0.5) {
					c = rgb[o.colour]
				}
			}
			for ch := 0; ch < 3; ch++ {
				v := c[ch] + rng.NormFloat64()*12
				img[ch*plane+y*size+x] = byte(math.Max(0, math.Min(255, math.Round(v))))
			}
		}
	}
	return img
}
