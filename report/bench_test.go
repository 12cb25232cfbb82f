package report

import "testing"

// BenchmarkReportPaper writes the complete report (10 tables in four
// formats, figures in PNG and SVG, the HTML page) for the paper's full
// matrix. Target: under 2 s.
func BenchmarkReportPaper(b *testing.B) {
	in := paper(b)
	for range b.N {
		if _, err := Write(b.TempDir(), in, nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/report")
}
