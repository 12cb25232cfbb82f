package numfmt

import "testing"

func TestValueAndMeanStd(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Value(90.02), "90.0"},
		{Value(100), "100.0"},
		{Value(4.499), "4.50"},
		{Value(0.009343), "0.009"},
		{Value(-12.34), "-12.3"},
		{MeanStd(90.1234, 0.3456, 3), "90.1 ± 0.3 (n=3)"},
		{MeanStd(4.5, 0.126, 5), "4.50 ± 0.13 (n=5)"},
		{MeanStd(0.5, 0, 2), "0.500 ± 0.000 (n=2)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
