// Package probe evaluates frozen features the cheap ways the seeds
// describe: ELEVATER's linear probe with automatic hyper-parameter tuning
// on few-shot subsets (Li et al., 2022), VTAB-1k tasks (Zhai et al.,
// 2019) and Meta-Dataset episodes with prototype, cosine-classifier and
// linear adapters (Triantafillou et al., 2020; Dumoulin et al., 2021).
// Every index list it draws comes from the labels and a seed only, so
// every encoder sees the same examples.
package probe
