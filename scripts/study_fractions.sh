#!/usr/bin/env bash
# Issue 40: the study's 1/5 and 1/2 checkpoints (the trend against FLOPs),
# in parts that go on from machine to machine (docs/experiments.md, "A
# study longer than one machine's stay").
#
# 1. Pretrain ELECTRA and MLM to 1/2 of the budget with the commit the
#    study's record was made with (d2f4868, in a git worktree beside this
#    clone): the same encoders, bit for bit, as those of
#    docs/experiments/study_full_sets (checked on a second Xeon/AMX machine).
#    About 70 min on 2 cores (Xeon with AMX); resumable.
# 2. Fine-tune the 1/5 and 1/2 checkpoints with today's code, by the study's
#    recipe, seed-major, restoring random init's seeds from the whole-budget
#    record and every finished fraction seed from
#    docs/experiments/study_fractions/results.json (this script's own record,
#    when an earlier part committed one). About 12 h in all.
# 3. Before the machine goes: copy $root/fractions/results.* to
#    docs/experiments/study_fractions/ and commit them (this script does the
#    copy after every run of step 2, stopped or not).
# Once every fraction seed is in, one last part pretrains to the whole budget
# and runs the study with checkpoint_fractions=(0.2, 0.5, 1.0) and both
# records: every seed is restored, and results.* hold the whole trend.
# Usage: bash scripts/study_fractions.sh [RUNS_ROOT]   (from the clone's root)
set -uo pipefail
root=$(realpath -m "${1:-runs}")
# The venv's own path, not realpath: that resolves to the base
# interpreter, outside the venv and its packages.
python="$PWD/.venv/bin/python"
record_commit=d2f4868
worktree=$(realpath -m "../official_electra_$record_commit")
fractions="efficiency_study.checkpoint_fractions=(0.2, 0.5)"
[ -d "$worktree" ] || git worktree add --detach "$worktree" "$record_commit"
# That commit's study only accepts fractions that end at the whole budget and
# pretrains a variant to its end before the next; so each variant is
# pretrained alone, towards (0.2, 0.5, 1.0), and stopped once its half-budget
# checkpoint is kept (a rerun resumes it, and one to the whole budget later
# goes on from the same files).
half_kept() {
  [ -f "$root/pilot_tapt/pretrain/$1/pretraining_metrics.json" ]
}
for variant_step in electra/kept/step_5639 mlm/kept/step_6116; do
  variant=${variant_step%%/*}
  half_kept "$variant_step" && continue
  (cd "$worktree" && exec setsid "$python" -m official_electra.efficiency_study \
    --gin_file=gin/experiments/pilot_task_adaptive.gin \
    --gin_bindings="efficiency_study.checkpoint_fractions=(0.2, 0.5, 1.0)" \
    --gin_bindings=efficiency_study.num_seeds=0 \
    --gin_bindings=efficiency_study.linear_probe=False \
    --corpus="$(realpath ../shared/data/corpus)/*.gz" \
    --glue_dir="$(realpath ../shared/data/glue)" \
    --tasks=CoLA,SST-2,MRPC,STS-B --variants="$variant" \
    --output_dir="$root/pilot_tapt") &
  pid=$!
  while kill -0 "$pid" 2> /dev/null && ! half_kept "$variant_step"; do
    sleep 10
  done
  # The metrics file is published last, so the kept copy is whole.
  half_kept "$variant_step" && kill -- -"$pid" 2> /dev/null
  wait "$pid"
  if ! half_kept "$variant_step"; then
    echo "error: $root/pilot_tapt/pretrain/$variant_step was not kept; rerun to resume" >&2
    exit 1
  fi
done
records=docs/experiments/study_full_sets/results.json
[ -f docs/experiments/study_fractions/results.json ] &&
  records="$records,docs/experiments/study_fractions/results.json"
"$python" -m official_electra.efficiency_study \
  --gin_file=gin/experiments/study_full_sets.gin \
  --gin_bindings="$fractions" \
  --pretrained_from="$root/pilot_tapt" --glue_dir=../shared/data/glue \
  --tasks=MRPC,STS-B,CoLA,SST-2 --output_dir="$root/fractions" \
  --finished_runs_from="$records"
status=$?
mkdir -p docs/experiments/study_fractions
for name in results.json results.md results.png; do
  [ -f "$root/fractions/$name" ] && cp "$root/fractions/$name" docs/experiments/study_fractions/
done
exit $status
