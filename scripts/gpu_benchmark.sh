#!/usr/bin/env bash
# Issue 7's GPU runs, as one script: our pretraining step with mixed_bfloat16
# and XLA, ELECTRA-Small and Base at sequence lengths 128 and 512, and Model
# Garden's ElectraPretrainer beside it at Small/128 (same precision and XLA).
# The Hugging Face worker is left out: it runs PyTorch on the CPU.
# Usage: scripts/gpu_benchmark.sh [OUTPUT_DIR]   (needs the venv's packages;
# about 5 minutes on one H100/H200, most of it XLA compilation). Each run
# prints its table and writes OUTPUT_DIR/gpu_MODEL_LEN.json.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu_benchmark}"
python="${PYTHON:-python}"
TF_CPP_MIN_LOG_LEVEL=3 "$python" -c "
import sys, tensorflow as tf
gpus = tf.config.list_physical_devices('GPU')
if not gpus:
  sys.exit('scripts/gpu_benchmark.sh: no GPU visible to TensorFlow; run it on '
           'a machine with one (and a CUDA build of TensorFlow)')
print('GPUs:', gpus)
"
mkdir -p "$out"
run() {  # model seq_len batch implementations
  echo "== $1, length $2, batch $3: $4" >&2
  timeout 150 "$python" -m official_electra.benchmark.pretrain --model="$1" \
      --seq_len="$2" --batch_size="$3" --implementations="$4" \
      --mixed_precision=mixed_bfloat16 --jit_compile --repetitions=5 \
      --steps=10 --warmup_steps=3 --output="$out/gpu_$1_$2.json" \
      || echo "== $1/$2 failed or ran past 150 s (exit $?)" >&2
}
run small 128 128 ours,model_garden
run small 512 32 ours
run base 128 64 ours
run base 512 16 ours
