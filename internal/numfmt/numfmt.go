// Package numfmt prints results as the GATE paper prints them: one
// precision per magnitude (90.0, 4.50, 0.009), and a mean over seeds with
// its standard deviation at the mean's precision (90.1 ± 0.3 (n=3)).
package numfmt

import (
	"math"
	"strconv"
)

// decimals is the number of decimals a value of v's magnitude prints with.
func decimals(v float64) int {
	switch a := math.Abs(v); {
	case a >= 10:
		return 1
	case a >= 1:
		return 2
	default:
		return 3
	}
}

// Value prints v at its magnitude's precision: 90.0, 4.50, 0.009 (not
// 90.02, 4.499 and 0.009343 side by side).
func Value(v float64) string { return strconv.FormatFloat(v, 'f', decimals(v), 64) }

// MeanStd prints a mean over n seeds with its standard deviation, both
// at the mean's precision: "90.1 ± 0.3 (n=3)".
func MeanStd(mean, std float64, n int) string {
	d := decimals(mean)
	return strconv.FormatFloat(mean, 'f', d, 64) + " ± " + strconv.FormatFloat(std, 'f', d, 64) + " (n=" + strconv.Itoa(n) + ")"
}

// Digits4 rounds v to four significant digits, for log lines
// (0.3909098207950592 reads 0.3909); files keep every digit.
func Digits4(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if err != nil {
		return v
	}
	return r
}
