"""gatepipe's PyTorch runtime worker (protocol gatepipe-trainer/1).

gatepipe writes this package into its cache (a directory named by the
package's content hash) and runs it as `python -m gatepipe_worker` for a
block with runtime = "torch", with $GATEPIPE_EXPERIMENT naming experiment.json: the
job (config.job), the encoder as gatepipe describes it (config.encoder,
gatepipe's EncoderSpec), its weights as a safetensors file in gatepipe's
tensor names, the example store, the output directory and the devices.
The models here are gatepipe's built-in architectures (mlp, convnet,
resnet, convnext, vit) with gatepipe's tensor names, so weights go both
ways between the Go and the torch runtime and both compute the same
function.

Modules: storage (safetensors, example stores, encoder inputs), models
(gatepipe's architectures and task heads), adapters (GATE's task
adapters, which a train job with a protocol card trains instead of
gatepipe's heads), run (devices, precision, progress), one module per
job, __main__ (the job table).

Jobs:
  features  the encoder's pooled features (or, with classes > 0, the
            head's softmax probabilities) of every split, in evaluation
            mode under inference_mode, written as SPLIT.safetensors
            (tensor "x", float32 [N, F]) into config.work; gatepipe
            writes the feature store from them.
  probe     linear probes on stored features (probe block).
  episodes  few-shot episodes' adapters on stored features.
  train     a task head (and the encoder, unless frozen) for one of the
            eight task families (train block), with resumable checkpoints.

Progress goes to log.jsonl beside experiment.json ({"step", "total"}),
errors to stderr as one last line. Standard library, torch and numpy.
"""
