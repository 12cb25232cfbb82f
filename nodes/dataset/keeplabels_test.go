package dataset

import (
	"slices"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// TestKeepLabelsOfMultiLabelData: the named labels' columns in the listed
// order, and only the examples with one of them, as GATE's chexpert keeps
// five NIH findings.
func TestKeepLabelsOfMultiLabelData(t *testing.T) {
	e := &examples{dtype: safetensors.U8, shape: []int{1}, u8: []byte{10, 11, 12, 13},
		classes: []string{"No Finding", "Cardiomegaly", "Edema", "Mass"}, targets: 4,
		yf: []float32{
			1, 0, 0, 0, // no kept label: dropped
			0, 1, 0, 0,
			0, 0, 1, 1,
			0, 1, 1, 0,
		}}
	out, err := e.keepClasses([]string{"Mass", "Cardiomegaly"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.u8, []byte{11, 12, 13}) || !slices.Equal(out.classes, []string{"Mass", "Cardiomegaly"}) || out.targets != 2 ||
		!slices.Equal(out.yf, []float32{0, 1, 1, 0, 0, 1}) {
		t.Errorf("kept %v %v %d %v", out.u8, out.classes, out.targets, out.yf)
	}
	if _, err := e.keepClasses([]string{"Hernia"}); err == nil || !strings.Contains(err.Error(), `no label "Hernia"`) {
		t.Errorf("unknown label: %v", err)
	}
}
