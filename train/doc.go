// Package train fine-tunes encoders with task heads using gorgonia: it
// builds the model graph (mlp and convnet encoders so far; a linear
// classification head), trains it with AdamW (decoupled weight decay) and
// a plateau scheduler, validates every N iterations, keeps the top-k
// checkpoints and ensembles them at test time, and reports metrics, a
// training log and the checkpoints' tensors under PyTorch-style names.
package train
