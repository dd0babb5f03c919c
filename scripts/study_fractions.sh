#!/usr/bin/env bash
# Issue 40: the study's 1/5 and 1/2 checkpoints (the trend against FLOPs),
# in parts that go on from machine to machine (docs/experiments.md, "A
# study longer than one machine's stay").
#
# 1. Pretrain ELECTRA and MLM to the whole budget with the commit the
#    study's record was made with (d2f4868, in a git worktree beside this
#    clone): the same encoders, bit for bit, as those of
#    docs/experiments/study_full_sets (checked on a second Xeon/AMX machine).
#    About 140 min on 2 cores (Xeon with AMX); resumable.
# 2. Fine-tune the 1/5, 1/2 and whole-budget checkpoints with today's code,
#    by the study's recipe, seed-major, restoring random init's and the
#    whole budget's seeds from the study's record and every finished
#    fraction seed from docs/experiments/study_fractions/results.json (this
#    script's own record, when an earlier part committed one). In two
#    rounds: every seed of MRPC, STS-B and CoLA first (about 5 h: the trend
#    with all its seeds on the tasks the other rows use), then SST-2's
#    (about 6 h), which costs as much as the other three together.
# 3. Before the machine goes: copy $root/fractions/results.* to
#    docs/experiments/study_fractions/ and commit them (this script does the
#    copy after every run of step 2, stopped or not).
# Its results.* hold the whole trend (every fraction of both objectives and
# random init) once every seed is in.
# Usage: bash scripts/study_fractions.sh [RUNS_ROOT]   (from the clone's root)
set -uo pipefail
root=$(realpath -m "${1:-runs}")
# The venv's own path, not realpath: that resolves to the base
# interpreter, outside the venv and its packages.
python="$PWD/.venv/bin/python"
record_commit=d2f4868
worktree=$(realpath -m "../official_electra_$record_commit")
fractions="efficiency_study.checkpoint_fractions=(0.2, 0.5, 1.0)"
[ -d "$worktree" ] || git worktree add --detach "$worktree" "$record_commit"
# The whole budget, so that step 2 is one study of every fraction (the
# study only keeps fractions that end at the whole budget) whose
# whole-budget seeds are the record's, restored. That commit's study stops
# with a traceback when asked for 0 seeds, after its pretraining (today's
# does not); the kept checkpoints are checked below.
(cd "$worktree" && "$python" -m official_electra.efficiency_study \
  --gin_file=gin/experiments/pilot_task_adaptive.gin \
  --gin_bindings="$fractions" \
  --gin_bindings=efficiency_study.num_seeds=0 \
  --gin_bindings=efficiency_study.linear_probe=False \
  --corpus="$(realpath ../shared/data/corpus)/*.gz" \
  --glue_dir="$(realpath ../shared/data/glue)" \
  --tasks=CoLA,SST-2,MRPC,STS-B --output_dir="$root/pilot_tapt")
for variant_step in electra/kept/step_11278 mlm/kept/step_12231; do
  if [ ! -f "$root/pilot_tapt/pretrain/$variant_step/pretraining_metrics.json" ]; then
    echo "error: $root/pilot_tapt/pretrain/$variant_step was not kept; rerun to resume" >&2
    exit 1
  fi
done
for tasks in MRPC,STS-B,CoLA MRPC,STS-B,CoLA,SST-2; do
  records=docs/experiments/study_full_sets/results.json
  [ -f docs/experiments/study_fractions/results.json ] &&
    records="$records,docs/experiments/study_fractions/results.json"
  "$python" -m official_electra.efficiency_study \
    --gin_file=gin/experiments/study_full_sets.gin \
    --gin_bindings="$fractions" \
    --pretrained_from="$root/pilot_tapt" --glue_dir=../shared/data/glue \
    --tasks="$tasks" --output_dir="$root/fractions" \
    --finished_runs_from="$records"
  status=$?
  mkdir -p docs/experiments/study_fractions
  for name in results.json results.md results.png; do
    [ -f "$root/fractions/$name" ] && cp "$root/fractions/$name" docs/experiments/study_fractions/
  done
  [ $status -eq 0 ] || exit $status
done
