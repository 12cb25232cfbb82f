// Package transfer judges transferability estimates (SITE): how well a
// proxy score per model ranks the models' fine-tuned accuracies on a
// target task. It has the rank statistics the literature reports —
// Kendall's tau, the weighted tau of Vigna (2015) with scipy's
// weightedtau semantics, Pearson, Spearman, top-1 hit — the fidelity of
// score differences to accuracy differences, and the static-ranking
// baseline that the SITE benchmarking paper shows a proxy must beat.
package transfer
