// Package formats groups the file-format readers and writers gatepipe
// uses: safetensors (tensors, checkpoints and the processed example
// store), IDX (the MNIST family), CIFAR binary, CSV/TSV tables, image
// folders, and archive extraction. Each sub-package parses untrusted input
// and reports malformed data with the file name and byte offset.
package formats
