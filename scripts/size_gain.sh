#!/usr/bin/env bash
# Issue 44, size against gain: the efficiency study at three encoder sizes
# (hidden 64, 128, 256; 4 layers; FFN 4x; heads hidden/64), ELECTRA and MLM
# at equal FLOPs within each size, then the ELECTRA - MLM gap (and each
# against random init) drawn against the encoder's parameters
# (python -m official_electra.experiments.size_report). Each size's budget
# keeps the tokens seen roughly equal: the pilot's 3e14 FLOPs at hidden 128,
# scaled by the square of the width (the step's FLOPs grow a little slower,
# the vocabulary projections being linear in it). Hidden 128 is the pilot
# itself (runs/pilot_tapt): copy or link it to $root/hidden_128 to reuse it.
# Resumable: rerun after a stop (each study resumes; finished parts are kept).
# Usage: bash scripts/size_gain.sh [GIN] [OUTPUT_ROOT] [REPORT_DIR]
# Not run yet. Pretraining both objectives takes about 2 h at hidden 128 (the
# pilot: 58 + 62 min on 2 Xeon/AMX cores), so roughly 0.5 h at 64 and 8 h at
# 256, plus 3-4 min of fine-tuning per encoder, task and 3 seeds: it runs in
# parts over several sessions.
set -euo pipefail
gin=${1:-gin/experiments/pilot_task_adaptive.gin}
root=${2:-runs/size_gain}
report=${3:-docs/experiments/size_gain}
studies=()
for size in "64 1 7.5e13" "128 2 3.0e14" "256 4 1.2e15"; do
  read -r hidden heads budget <<< "$size"
  python -m official_electra.efficiency_study --gin_file="$gin" \
    --corpus='../shared/data/corpus/*.gz' --glue_dir=../shared/data/glue \
    --tasks=CoLA,SST-2,MRPC,STS-B --variants=electra,mlm \
    --gin_bindings="study_encoder.hidden_size=$hidden" \
    --gin_bindings="study_encoder.embedding_size=$hidden" \
    --gin_bindings="study_encoder.num_attention_heads=$heads" \
    --gin_bindings="study_encoder.intermediate_size=$((4 * hidden))" \
    --gin_bindings="efficiency_study.budget_flops=$budget" \
    --output_dir="$root/hidden_$hidden"
  studies+=("$root/hidden_$hidden")
done
python -m official_electra.experiments.size_report \
  --studies="$(IFS=,; echo "${studies[*]}")" --output_dir="$report"
