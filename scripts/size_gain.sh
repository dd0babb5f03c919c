#!/usr/bin/env bash
# Issue 44, size against gain: the study's recipe (gin/experiments/
# study_full_sets.gin: the pilot's pretraining, the paper's fine-tuning on
# each task's full training set, 5 seeds) at other encoder sizes (4 layers,
# FFN 4x, heads hidden/64), ELECTRA and MLM at equal FLOPs within each size,
# then the ELECTRA - MLM gap (and each against random init) drawn against
# the encoder's parameters (python -m official_electra.experiments.
# size_report). Hidden 128 is the study itself: its committed record
# (docs/experiments/study_full_sets) is read, not run again. Each other
# size's budget keeps the tokens seen roughly equal: the study's 3e14 FLOPs
# scaled by the square of the width (the step's FLOPs grow a little slower,
# the vocabulary projections being linear in it).
# The tasks are MRPC, STS-B and CoLA: SST-2's full set costs as much
# fine-tuning as the other three together.
# Resumable: rerun after a stop (each study resumes; finished parts are kept).
# Usage: bash scripts/size_gain.sh [OUTPUT_ROOT] [REPORT_DIR] [HIDDEN...]
#   e.g. bash scripts/size_gain.sh runs/size_gain docs/experiments/size_gain 64
# Time at hidden 64, measured on 2 AMD EPYC cores (2026-12-07): about 40 min
# of pretraining (ELECTRA about 24 min, MLM 17) and 1.6 h of fine-tuning
# (3 encoders x 5 seeds x 3 tasks, about 6.5 min per encoder and seed, STS-B
# most of it). At 256, roughly 8 h of pretraining (estimated from hidden 128:
# 58 + 62 min on Xeon/AMX): it runs in parts over several sessions.
set -euo pipefail
root=${1:-runs/size_gain}
report=${2:-docs/experiments/size_gain}
shift $(($# < 2 ? $# : 2))
sizes=("${@:-64}")
tasks=MRPC,STS-B,CoLA
studies=(docs/experiments/study_full_sets)
for hidden in "${sizes[@]}"; do
  if [ "$hidden" = 128 ]; then
    continue  # the study's own record
  fi
  heads=$(( hidden / 64 > 0 ? hidden / 64 : 1 ))
  budget=$(python -c "print(3.0e14 * ($hidden / 128) ** 2)")
  python -m official_electra.efficiency_study \
    --gin_file=gin/experiments/study_full_sets.gin \
    --gin_bindings='efficiency_study.checkpoint_fractions=(1.0,)' \
    --gin_bindings=efficiency_study.linear_probe=False \
    --gin_bindings="study_encoder.hidden_size=$hidden" \
    --gin_bindings="study_encoder.embedding_size=$hidden" \
    --gin_bindings="study_encoder.num_attention_heads=$heads" \
    --gin_bindings="study_encoder.intermediate_size=$((4 * hidden))" \
    --gin_bindings="efficiency_study.budget_flops=$budget" \
    --corpus='../shared/data/corpus/*.gz' --glue_dir=../shared/data/glue \
    --tasks="$tasks" --variants=electra,mlm \
    --output_dir="$root/hidden_$hidden"
  studies+=("$root/hidden_$hidden")
done
python -m official_electra.experiments.size_report \
  --studies="$(IFS=,; echo "${studies[*]}")" --tasks="$tasks" \
  --output_dir="$report"
