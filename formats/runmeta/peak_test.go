package runmeta

import "testing"

func TestParseVmHWM(t *testing.T) {
	cases := []struct {
		status string
		want   int64
		ok     bool
	}{
		{"Name:\tgatepipe\nVmPeak:\t  900 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1000 kB\n", 2048 * 1024, true},
		{"Name:\tx\nVmRSS:\t 1000 kB\n", 0, false},
		{"VmHWM:\t 12 MB\n", 0, false},
		{"VmHWM:\t lots kB\n", 0, false},
	}
	for _, c := range cases {
		got, ok := parseVmHWM([]byte(c.status))
		if got != c.want || ok != c.ok {
			t.Errorf("%q: got %d %v, want %d %v", c.status, got, ok, c.want, c.ok)
		}
	}
}

// TestPeakRSSGrowsWithMemory touches 64 MiB and expects the peak to cover it.
func TestPeakRSSGrowsWithMemory(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	if got := PeakRSS(); got < 64<<20 {
		t.Fatalf("peak RSS %d after touching 64 MiB", got)
	}
	_ = buf[len(buf)-1]
}
