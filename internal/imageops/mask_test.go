package imageops

import (
	"fmt"
	"testing"
)

// TestApplyMaskFollowsTheImage: a mask goes through the shorter-side
// resize (nearest neighbour at pixel centres) and the centre crop that
// its image goes through, with background where the crop is larger.
func TestApplyMaskFollowsTheImage(t *testing.T) {
	// 2x4 labels, resized so the shorter side is 4 (4x8), cropped to 4x4.
	mask := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	got, err := Preprocess{Size: [2]int{4, 4}, ResizeTo: 4}.ApplyMask(mask, 2, 4)
	want := []int64{2, 2, 3, 3, 2, 2, 3, 3, 6, 6, 7, 7, 6, 6, 7, 7}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v %v, want %v", got, err, want)
	}
	// A crop larger than the resized mask pads with background.
	got, _ = Preprocess{Size: [2]int{3, 3}, ResizeTo: 1}.ApplyMask([]int64{9}, 1, 1)
	if fmt.Sprint(got) != "[0 0 0 0 9 0 0 0 0]" {
		t.Fatalf("%v", got)
	}
	if _, err := (Preprocess{Size: [2]int{4, 4}}).ApplyMask(mask, 3, 3); err == nil {
		t.Fatal("a mask of the wrong size was accepted")
	}
}
