package transfer

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// referenceCase is one case of testdata/reference.json, written by
// testdata/make_reference.py from thuml's LogME code, the exact evidence
// and google-research's GBC code.
type referenceCase struct {
	Name       string
	N, D, C    int
	X          []float64
	Y          []int
	Rank       int
	LogMEThuml float64 `json:"logme_thuml"`
	LogMEExact float64 `json:"logme_exact"`
	GBC        float64 `json:"gbc"`
}

func loadReference(t *testing.T) []referenceCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct{ Cases []referenceCase }
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return ref.Cases
}

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-3)
}

// TestLogMEMatchesReference: with N > D, rank-deficient or not, LogME is
// the exact evidence (thuml's value too, but for all-zero features, which
// thuml's truncated SVD drops); with N <= D, thuml's value.
func TestLogMEMatchesReference(t *testing.T) {
	for _, c := range loadReference(t) {
		t.Run(c.Name, func(t *testing.T) {
			got, err := LogME(Features{X: c.X, N: c.N, D: c.D, C: c.C, Y: c.Y})
			if err != nil {
				t.Fatal(err)
			}
			want, against := c.LogMEThuml, "thuml"
			if c.N > c.D {
				want, against = c.LogMEExact, "the exact evidence"
				deadUnits := strings.Contains(c.Name, "dead")
				if !deadUnits && !near(c.LogMEThuml, c.LogMEExact, 1e-5) {
					t.Fatalf("fixture: thuml %.9g and the exact evidence %.9g differ without all-zero features", c.LogMEThuml, c.LogMEExact)
				}
			}
			if !near(got, want, 1e-5) {
				t.Fatalf("LogME %.9g, %s %.9g (thuml %.9g, exact %.9g; rank %d of %d x %d)", got, against, want, c.LogMEThuml, c.LogMEExact, c.Rank, c.N, c.D)
			}
			t.Logf("LogME %.6g (%s %.6g)", got, against, want)
		})
	}
}

// TestLogMEIgnoresDeadUnits: a feature that is 0 for every example
// carries nothing, and LogME does not change when one is appended.
func TestLogMEIgnoresDeadUnits(t *testing.T) {
	for _, c := range loadReference(t) {
		if c.N <= c.D+3 {
			continue
		}
		f := Features{X: c.X, N: c.N, D: c.D, C: c.C, Y: c.Y}
		wider := Features{N: c.N, D: c.D + 3, C: c.C, Y: c.Y}
		for i := range c.N {
			wider.X = append(append(wider.X, c.X[i*c.D:(i+1)*c.D]...), 0, 0, 0)
		}
		a, err := LogME(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := LogME(wider)
		if err != nil {
			t.Fatal(err)
		}
		if !near(b, a, 1e-9) {
			t.Errorf("%s: LogME %.9g, %.9g with three dead units appended", c.Name, a, b)
		}
	}
}

// TestGBCMatchesReference, N < 64 < D included (PCA to N components,
// where GBC used to index 64 and panic).
func TestGBCMatchesReference(t *testing.T) {
	for _, c := range loadReference(t) {
		t.Run(c.Name, func(t *testing.T) {
			got, err := GBC(Features{X: c.X, N: c.N, D: c.D, C: c.C, Y: c.Y})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-c.GBC) > 1e-6*math.Abs(c.GBC)+1e-12 {
				t.Fatalf("GBC %.9g, google-research's %.9g", got, c.GBC)
			}
		})
	}
}
