#!/usr/bin/env bash
# Issue 41's CPU-scale SQuAD run (gin/experiments/squad_cpu.gin): random
# init, ELECTRA and MLM from runs/pilot_tapt (issue 40's pilot), one seed of
# each first, then up to 3 seeds. Resumable: rerun it after a stop (finished
# seeds are reused, a running one resumes from its last checkpoint).
# Usage: bash scripts/squad_cpu.sh [PILOT_DIR] [OUTPUT_DIR] [SQUAD_FILE]
set -euo pipefail
pilot=${1:-runs/pilot_tapt}
output=${2:-runs/squad_cpu}
squad_file=${3:-../shared/data/squad/dev-v1.1.json}
for seeds in 1 2 3; do
  for encoder in random_init electra mlm; do
    init=()
    if [[ $encoder != random_init ]]; then
      # The whole budget: the kept checkpoint of the highest step.
      kept=$(ls -d "$pilot/pretrain/$encoder/kept/step_"* |
             awk -F_ '{print $NF, $0}' | sort -n | tail -1 | cut -d' ' -f2)
      init=(--init_checkpoint="$kept")
    fi
    python -m official_electra.finetune --task=SQuAD-1.1 \
      --train_file="$squad_file" --train_articles=0-39 \
      --predict_file="$squad_file" --predict_articles=40-47 \
      --vocab_file="$pilot/vocab.txt" "${init[@]}" \
      --gin_file=gin/experiments/squad_cpu.gin --num_seeds=$seeds \
      --model_dir="$output/$encoder"
  done
done
