package specs

import (
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/train"
)

// TestTorchvisionTable: the table torchvision's own weight enums wrote
// names files, presets gatepipe has and the transforms torchvision
// evaluates with; an unknown name is refused with the closest.
func TestTorchvisionTable(t *testing.T) {
	tv, err := LookupTorchvision("torchvision:resnet50.IMAGENET1K_V2")
	if err != nil {
		t.Fatal(err)
	}
	if tv.URL != "https://download.pytorch.org/models/resnet50-11ad3fa6.pth" || tv.Preset != "resnet50" ||
		tv.Preprocess.Size != [2]int{224, 224} || tv.Preprocess.ResizeTo != 232 || tv.Preprocess.Interpolation != imageops.Bilinear {
		t.Fatalf("resnet50.IMAGENET1K_V2 = %+v", tv)
	}
	if ref := tv.Ref(); ref.SHA256Prefix != "11ad3fa6" || ref.Name != "resnet50-11ad3fa6.pth" {
		t.Fatalf("ref = %+v", ref)
	}
	table, err := torchvisionTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range table {
		if _, ok := train.Presets[row.Preset]; !ok {
			t.Errorf("%s: preset %s is not gatepipe's", row.Name, row.Preset)
		}
		if err := row.Preprocess.Check(); err != nil {
			t.Errorf("%s: %v", row.Name, err)
		}
	}
	if _, err := LookupTorchvision("torchvision:resnet50.IMAGENET1K_V3"); err == nil || !strings.Contains(err.Error(), "the closest: resnet50.IMAGENET1K_V") {
		t.Fatalf("unknown name: %v", err)
	}
}
