package devices

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const smi = `0, GPU-aaaa-1111, NVIDIA H100 80GB HBM3, 81559 MiB
1, GPU-bbbb-2222, NVIDIA H100 80GB HBM3, 81559 MiB
2, GPU-cccc-3333, NVIDIA H100 80GB HBM3, 81559 MiB
`

func TestParseAndFilter(t *testing.T) {
	gpus, err := ParseNvidiaSMI([]byte(smi))
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 3 || gpus[1].UUID != "GPU-bbbb-2222" || gpus[2].MemoryMiB != 81559 || gpus[0].Name != "NVIDIA H100 80GB HBM3" {
		t.Fatalf("%+v", gpus)
	}
	ids := func(gs []GPU) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.ID)
		}
		return out
	}
	tests := map[string][]string{
		"2,0":      {"2", "0"},
		"GPU-bbbb": {"GPU-bbbb-2222"},
		"":         nil,
		"-1":       nil,
		"1,7":      {"1"},
		"0,-1,2":   {"0"},
	}
	for visible, want := range tests {
		if diff := cmp.Diff(want, ids(FilterVisible(gpus, visible))); diff != "" {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q (-want +got):\n%s", visible, diff)
		}
	}
	if _, err := ParseNvidiaSMI([]byte("0, x, y\n")); err == nil {
		t.Fatal("short line accepted")
	}
}
