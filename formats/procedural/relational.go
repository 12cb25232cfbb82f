package procedural

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// QuestionLength is the number of tokens of every question (padded).
const QuestionLength = 6

// Vocab is the relational task's question vocabulary; token 0 pads.
var Vocab = append([]string{"<pad>", "how", "many", "objects", "is", "there", "a", "what", "colour", "shape", "the", "object"},
	append(append([]string(nil), Colours...), Shapes...)...)

// Answers are the relational task's classes: counts, yes/no, colours and
// shapes (CLEVR's question families on a small scale).
var Answers = append([]string{"0", "1", "2", "3", "4", "5", "yes", "no"}, append(append([]string(nil), Colours...), Shapes...)...)

func token(w string) int64 { return int64(slices.Index(Vocab, w)) }

func answer(a string) int64 { return int64(slices.Index(Answers, a)) }

// question asks one of four question families about objs and returns its
// tokens (padded to QuestionLength) and answer: how many objects of a
// colour, whether there is a shape, the colour of the only object of a
// shape, the shape of the only object of a colour. Families whose
// question would be ambiguous for this scene are skipped.
func question(rng *rand.Rand, objs []object) ([]int64, int64) {
	var byColour [4]int
	var byShape [3]int
	for _, o := range objs {
		byColour[o.colour]++
		byShape[o.shape]++
	}
	pad := func(words ...string) []int64 {
		q := make([]int64, QuestionLength)
		for i, w := range words {
			q[i] = token(w)
		}
		return q
	}
	for {
		switch rng.IntN(4) {
		case 0:
			c := rng.IntN(len(Colours))
			return pad("how", "many", Colours[c], "objects"), answer(fmt.Sprint(byColour[c]))
		case 1:
			sh := rng.IntN(len(Shapes))
			a := "no"
			if byShape[sh] > 0 {
				a = "yes"
			}
			return pad("is", "there", "a", Shapes[sh]), answer(a)
		case 2:
			sh := rng.IntN(len(Shapes))
			if byShape[sh] != 1 {
				continue
			}
			for _, o := range objs {
				if o.shape == sh {
					return pad("what", "colour", "is", "the", Shapes[sh]), answer(Colours[o.colour])
				}
			}
		case 3:
			c := rng.IntN(len(Colours))
			if byColour[c] != 1 {
				continue
			}
			for _, o := range objs {
				if o.colour == c {
					return pad("what", "shape", "is", "the", Colours[c], "object"), answer(Shapes[o.shape])
				}
			}
		}
	}
}

// CaptionLength is the number of tokens of every caption (padded): up to
// three "colour shape" pairs.
const CaptionLength = 6

// caption describes a scene's objects as colour-shape pairs in a fixed
// order (by colour, then shape), so equal scenes get equal captions.
func caption(objs []object) []int64 {
	pairs := make([][2]int, len(objs))
	for i, o := range objs {
		pairs[i] = [2]int{o.colour, o.shape}
	}
	slices.SortFunc(pairs, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	q := make([]int64, CaptionLength)
	for i, p := range pairs {
		q[2*i], q[2*i+1] = token(Colours[p[0]]), token(Shapes[p[1]])
	}
	return q
}
