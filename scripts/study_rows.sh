#!/usr/bin/env bash
# The study's further rows (gin/experiments/study_rows.gin), one whole row at
# a time, in parts that go on from machine to machine (docs/experiments.md,
# "A study longer than one machine's stay"):
#   issue 40: the paper's ablations electra_15, replace_mlm, all_tokens_mlm;
#   issue 44: span masking for both objectives, electra_spans and mlm_spans.
# For each variant, in the order given:
# 1. pretrain it to the study's whole budget (3e14 training FLOPs, the
#    pilot's rate, vocabulary and records) into RUNS_ROOT/pilot_tapt, with
#    this clone's code: about 1 h on 2 Xeon/AMX cores; resumable. The
#    pilot's vocabulary and records are made there first when absent, and
#    kept when present (a row compared across machines should use the same
#    records: not checked across commits).
# 2. fine-tune it on MRPC, STS-B and CoLA by the study's recipe (5 seeds,
#    about 1.3 h), restoring random init's seeds from the study's record and
#    the variant's finished seeds from its own committed record (only the
#    discriminator: study_rows.gin's generator row is ELECTRA's, done);
# 3. copy its results.* to docs/experiments/study_rows/VARIANT/ (after every
#    part, stopped or not: commit them before the machine goes), and once
#    every seed is in, compare it with the study's ELECTRA, MLM and random
#    init, paired by seed (comparison.* there).
# A row's seeds are one encoder's: the commit that pretrains a variant is
# written to docs/experiments/study_rows/VARIANT/commit.txt (and beside its
# pretraining folder). Until this machine has finished that pretraining, a
# clone of another commit is refused when the pretraining was begun here
# with that commit or when the committed record already holds seeds (on a
# new machine, pretraining again with the same commit gives the same
# encoder bit for bit: checked on two Xeon/AMX machines). Fine-tuning a
# finished pretraining takes any commit.
# Usage: bash scripts/study_rows.sh [RUNS_ROOT] [VARIANT...]   (from the
#   clone's root; the default variants are the five above, issue 40's first)
set -uo pipefail
root=$(realpath -m "${1:-runs}")
shift $(($# < 1 ? $# : 1))
if [ $# -eq 0 ]; then
  variants=(electra_15 replace_mlm all_tokens_mlm electra_spans mlm_spans)
else
  variants=("$@")
fi
python="$PWD/.venv/bin/python"
[ -x "$python" ] || python=python
study=docs/experiments/study_full_sets/results.json
commit=$(git rev-parse --short HEAD)
for variant in "${variants[@]}"; do
  record_dir=docs/experiments/study_rows/$variant
  pretrain_dir="$root/pilot_tapt/pretrain"
  # The commit that began this variant's pretraining on this machine, and
  # the mark of its end.
  begun="$pretrain_dir/$variant.commit"
  pretrained="$pretrain_dir/$variant.pretrained"
  mkdir -p "$record_dir" "$pretrain_dir"
  if [ ! -f "$pretrained" ]; then
    if [ -f "$begun" ] && [ "$(cat "$begun")" != "$commit" ]; then
      echo "error: $variant's pretraining in $pretrain_dir was begun with" \
        "commit $(cat "$begun"), this clone is $commit: resume it from a" \
        "clone of that commit, or delete $pretrain_dir/$variant and $begun" \
        "to begin it again" >&2
      exit 1
    fi
    if [ -f "$record_dir/results.json" ] &&
       [ "$(cat "$record_dir/commit.txt" 2>/dev/null)" != "$commit" ]; then
      echo "error: $record_dir holds seeds of $variant pretrained with" \
        "commit $(cat "$record_dir/commit.txt" 2>/dev/null || echo unknown)" \
        "($record_dir/commit.txt), this clone is $commit: pretrain it from" \
        "a clone of that commit (the same encoder bit for bit), or delete" \
        "$record_dir to begin the row again" >&2
      exit 1
    fi
    [ -f "$begun" ] || echo "$commit" > "$begun"
  fi
  [ -f "$begun" ] && cp "$begun" "$record_dir/commit.txt"
  echo "== $variant: pretraining (commit $(cat "$begun" 2>/dev/null || echo "$commit"))"
  "$python" -m official_electra.efficiency_study \
    --gin_file=gin/experiments/pilot_task_adaptive.gin \
    --gin_bindings=efficiency_study.num_seeds=0 \
    --gin_bindings=efficiency_study.linear_probe=False \
    --corpus="$(realpath ../shared/data/corpus)/*.gz" \
    --glue_dir="$(realpath ../shared/data/glue)" \
    --tasks=CoLA,SST-2,MRPC,STS-B --output_dir="$root/pilot_tapt" \
    --variants="$variant" || exit $?
  touch "$pretrained"
  echo "== $variant: fine-tuning"
  records=$study
  [ -f "$record_dir/results.json" ] && records="$records,$record_dir/results.json"
  "$python" -m official_electra.efficiency_study \
    --gin_file=gin/experiments/study_rows.gin \
    --gin_bindings='efficiency_study.checkpoint_fractions=(1.0,)' \
    --gin_bindings=efficiency_study.linear_probe=False \
    --gin_bindings='efficiency_study.finetune_generators=()' \
    --pretrained_from="$root/pilot_tapt" --glue_dir=../shared/data/glue \
    --tasks=MRPC,STS-B,CoLA --variants="$variant" \
    --output_dir="$root/study_rows/$variant" \
    --finished_runs_from="$records"
  status=$?
  for name in results.json results.md results.png; do
    [ -f "$root/study_rows/$variant/$name" ] &&
      cp "$root/study_rows/$variant/$name" "$record_dir/"
  done
  [ $status -eq 0 ] || exit $status
  "$python" -m official_electra.experiments.compare_records \
    --arm="$variant,$record_dir/results.json,$variant,1.0" \
    --arm="electra,$study,electra,1.0" \
    --arm="mlm,$study,mlm,1.0" \
    --arm="random,$study,random_init,0" \
    --tasks=MRPC,STS-B,CoLA --output_dir="$record_dir" || exit $?
done
