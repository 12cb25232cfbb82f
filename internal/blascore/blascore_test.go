package blascore

import "testing"

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Features
		env  string
		want string
	}{
		{"AVX2 only: OpenBLAS's own choice", Features{}, "", ""},
		{"AVX-512", Features{AVX512: true}, "", "SkylakeX"},
		{"AVX-512 with bfloat16", Features{AVX512: true, BF16: true}, "", "Cooperlake"},
		{"the user's choice stands", Features{AVX512: true, BF16: true}, "Haswell", ""},
	} {
		if got := Choose(tc.f, tc.env); got != tc.want {
			t.Errorf("%s: Choose(%+v, %q) = %q, want %q", tc.name, tc.f, tc.env, got, tc.want)
		}
	}
}

func TestBestEnv(t *testing.T) {
	got, core := BestEnv(), Best(Host())
	switch {
	case core == "" && got != nil:
		t.Errorf("BestEnv = %v on a CPU without AVX-512, want nil", got)
	case core != "" && (len(got) != 1 || got[0] != EnvVar+"="+core):
		t.Errorf("BestEnv = %v, want [%s=%s]", got, EnvVar, core)
	}
}
