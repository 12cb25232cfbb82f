// Package report turns a performance matrix (and optionally EEVEE search
// results and the GATE paper's published summary rows) into the tables and
// figures of a paper: per-family tables with the best three results marked
// (Markdown, CSV, LaTeX with booktabs, HTML), tier rows, a ranking heatmap,
// EEVEE bar and box plots, family comparisons, and one self-contained HTML
// report.
package report
