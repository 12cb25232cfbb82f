package main

import (
	"strings"
	"testing"
)

// TestPlanSaysTheStoresCost plans the small tier at its default (full)
// scale and at the cpu scale: plan names each dataset's store with its
// examples, size on disk and peak memory before anything runs, ImageNet-1k
// at 224 px being 31.1 GiB as JPEGs (186.6 GiB raw), and -var scale=cpu
// shrinks it. (-timing=false: the times are TestFullScaleOnTheCPUWarns's;
// measuring them took two minutes here.)
func TestPlanSaysTheStoresCost(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"full", []string{"plan", "-timing=false", "-var", "adapters=compact", "../../examples/tier_small.hcl"}, []string{
			"Stores to write:",
			"module.imagenet1k.dataset.data[0]  1,331,167 examples of [3 224 224] U8 as JPEG (quality 90): 31.1 GiB on disk, about ",
			"MiB of memory at the peak",
			"in all: ",
		}},
		{"cpu", []string{"plan", "-timing=false", "-var", "scale=cpu", "-var", "adapters=compact", "../../examples/tier_small.hcl"}, []string{
			"module.imagenet1k.dataset.data[0]  ",
		}},
	}
	var cpuLine string
	for _, c := range cases {
		r := gp(t, t.TempDir(), c.args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", c.name, r.code, r.stdout, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: plan does not say %q:\n%s", c.name, w, r.stdout)
			}
		}
		if c.name == "cpu" {
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.Contains(l, "module.imagenet1k.dataset.data[0]  ") && strings.Contains(l, "examples of") {
					cpuLine = l
				}
			}
		}
	}
	if strings.Contains(cpuLine, "31.1 GiB") || cpuLine == "" {
		t.Errorf("at the cpu scale the ImageNet-1k store is still %q", cpuLine)
	}
	t.Log(cpuLine)
}
