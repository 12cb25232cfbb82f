package procedural

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestGenerateIsSeededAndLabelled(t *testing.T) {
	for _, task := range Tasks {
		t.Run(task, func(t *testing.T) {
			c := Config{Task: task, N: 50, Size: 24, Seed: 3}
			a, err := Generate(c)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Generate(c)
			if !bytes.Equal(a.Pixels, b.Pixels) {
				t.Fatal("the same seed rendered different pixels")
			}
			c.Stream = 1
			other, _ := Generate(c)
			if bytes.Equal(a.Pixels, other.Pixels) {
				t.Fatal("another stream rendered the same pixels")
			}
			planes := 3
			switch task {
			case "video", "video_count":
				planes = 4 * 3
			case "sketch":
				planes = 1
			}
			if len(a.Pixels) != planes*50*24*24 {
				t.Fatalf("%d bytes", len(a.Pixels))
			}
			switch a.Task {
			case "classification", "video", "relational", "fewshot":
				if want := map[string]int{"shape": 12, "video": 4, "relational": 15, "fewshot": 24, "sketch": 6}[task]; len(a.Labels) != 50 || len(a.Classes) != want {
					t.Fatalf("%d labels, %d classes", len(a.Labels), len(a.Classes))
				}
			case "segmentation":
				if len(a.Labels) != 50*24*24 || len(a.Classes) != 4 {
					t.Fatalf("%d labels, %d classes", len(a.Labels), len(a.Classes))
				}
				// The mask marks exactly the pixels that are not background
				// coloured (background pixels are dark).
				plane := 24 * 24
				for i := 0; i < 5; i++ {
					img := a.Pixels[i*3*plane : (i+1)*3*plane]
					for p := 0; p < plane; p++ {
						bright := int(img[p])+int(img[plane+p])+int(img[2*plane+p]) > 200
						if bright != (a.Labels[i*plane+p] != 0) {
							t.Fatalf("example %d pixel %d: brightness %v but mask %d", i, p, bright, a.Labels[i*plane+p])
						}
					}
				}
			case "retrieval":
				if len(a.Questions) != 50*CaptionLength {
					t.Fatalf("%d caption tokens", len(a.Questions))
				}
			default:
				if len(a.Targets) != 50*a.Width {
					t.Fatalf("%d targets of width %d", len(a.Targets), a.Width)
				}
			}
		})
	}
}

// TestTargetsMatchPixels: the colour of a one-object scene's label is the
// colour found in its pixels, and counts grow with coloured area.
func TestTargetsMatchPixels(t *testing.T) {
	s, _ := Generate(Config{Task: "shape", N: 30, Size: 32, Seed: 1})
	plane := 32 * 32
	for i, lab := range s.Labels {
		img := s.Pixels[i*3*plane : (i+1)*3*plane]
		var sum [3]int
		for p := 0; p < plane; p++ {
			if int(img[p])+int(img[plane+p])+int(img[2*plane+p]) > 300 {
				for c := 0; c < 3; c++ {
					sum[c] += int(img[c*plane+p])
				}
			}
		}
		colour := int(lab) / len(Shapes)
		want := rgb[colour]
		best, bestDist := -1, 1e18
		for k, c := range rgb {
			var d float64
			for ch := 0; ch < 3; ch++ {
				diff := float64(sum[ch]) - c[ch]*float64(sum[0]+sum[1]+sum[2])/(c[0]+c[1]+c[2])
				d += diff * diff
			}
			if d < bestDist {
				best, bestDist = k, d
			}
		}
		if best != colour {
			t.Errorf("example %d: label colour %s (%v), pixels look %s", i, Colours[colour], want, Colours[best])
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{Task: "retrieval", N: 1, Size: 16}, {Task: "video", N: 1, Size: 16, Frames: 1}, {Task: "count", N: 0, Size: 16}, {Task: "count", N: 1, Size: 4}} {
		if _, err := Generate(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestVideoMovesInItsDirection: the bright mass of a clip's first and last
// frames moves the labelled way.
func TestVideoMovesInItsDirection(t *testing.T) {
	s, err := Generate(Config{Task: "video", N: 40, Size: 32, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	plane, frame := 32*32, 3*32*32
	centre := func(img []byte) (float64, float64) {
		var sx, sy, n float64
		for p := 0; p < plane; p++ {
			if int(img[p])+int(img[plane+p])+int(img[2*plane+p]) > 200 {
				sx += float64(p % 32)
				sy += float64(p / 32)
				n++
			}
		}
		return sx / n, sy / n
	}
	for i, lab := range s.Labels {
		c := s.Pixels[i*4*frame : (i+1)*4*frame]
		x0, y0 := centre(c[:frame])
		x1, y1 := centre(c[3*frame:])
		dx, dy := x1-x0, y1-y0
		var got string
		switch {
		case math.Abs(dx) > math.Abs(dy) && dx < 0:
			got = "left"
		case math.Abs(dx) > math.Abs(dy):
			got = "right"
		case dy < 0:
			got = "up"
		default:
			got = "down"
		}
		if got != Directions[lab] {
			t.Errorf("clip %d: labelled %s, its bright mass moves %s (%.1f, %.1f)", i, Directions[lab], got, dx, dy)
		}
	}
}

// TestQuestionsAreAnsweredByTheScene re-derives each answer from the
// scene's objects.
func TestQuestionsAreAnsweredByTheScene(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	families := map[string]bool{}
	for i := 0; i < 300; i++ {
		objs := place(rng, 2+rng.IntN(4), 32)
		q, a := question(rng, objs)
		words := []string{}
		for _, tok := range q {
			if tok > 0 {
				words = append(words, Vocab[tok])
			}
		}
		families[words[0]+" "+words[1]] = true
		var want string
		switch words[0] {
		case "how":
			n := 0
			for _, o := range objs {
				if Colours[o.colour] == words[2] {
					n++
				}
			}
			want = fmt.Sprint(n)
		case "is":
			want = "no"
			for _, o := range objs {
				if Shapes[o.shape] == words[3] {
					want = "yes"
				}
			}
		case "what":
			for _, o := range objs {
				if words[1] == "colour" && Shapes[o.shape] == words[4] {
					want = Colours[o.colour]
				}
				if words[1] == "shape" && Colours[o.colour] == words[4] {
					want = Shapes[o.shape]
				}
			}
		}
		if Answers[a] != want {
			t.Fatalf("%v about %+v: answer %s, want %s", words, objs, Answers[a], want)
		}
	}
	if len(families) != 4 {
		t.Errorf("question families asked: %v", families)
	}
}

func TestCaptionsNameTheObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	objs := place(rng, 3, 32)
	objs[0].colour, objs[0].shape = 2, 1 // blue circle
	objs[1].colour, objs[1].shape = 0, 2 // red triangle
	objs[2].colour, objs[2].shape = 2, 0 // blue square
	var words []string
	for _, tok := range caption(objs) {
		words = append(words, Vocab[tok])
	}
	if got := fmt.Sprint(words); got != "[red triangle blue square blue circle]" {
		t.Fatalf("caption %s", got)
	}
}

// TestFewShotHoldsClassesOut: the test stream's classes never occur in the
// training stream, and both cover their classes.
func TestFewShotHoldsClassesOut(t *testing.T) {
	train, _ := Generate(Config{Task: "fewshot", N: 800, Size: 16, Seed: 4})
	test, _ := Generate(Config{Task: "fewshot", N: 400, Size: 16, Seed: 4, Stream: 1})
	seen, held := map[int64]bool{}, map[int64]bool{}
	for _, y := range train.Labels {
		seen[y] = true
	}
	for _, y := range test.Labels {
		held[y] = true
		if seen[y] {
			t.Fatalf("class %s is in both streams", test.Classes[y])
		}
	}
	if len(seen) != 16 || len(held) != 8 {
		t.Fatalf("%d training classes, %d held out", len(seen), len(held))
	}
}
