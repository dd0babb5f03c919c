"""Encoders of different studies compared, paired by fine-tuning seed.

    python -m official_electra.experiments.compare_records \
      --arm=replicate,runs/replicate/results.json,electra,1.0 \
      --arm=first,docs/experiments/study_full_sets/results.json,electra,1.0 \
      --arm=random,docs/experiments/study_full_sets/results.json,random_init,0 \
      --tasks=MRPC,STS-B,CoLA --output_dir=docs/experiments/replicate

A study compares the encoders it fine-tunes itself (`paired_comparison`).
This compares encoders recorded by different studies' `results.json` under
the same fine-tuning recipe: an encoder pretrained again (a replicate: how
much does one pretraining run's draw move the scores?), or a variant studied
later against the encoders of an earlier study. Each arm is
`label,results.json,variant,budget fraction`; every two arms are compared on
the seeds both have on every task (the same seed fixes the head's
initialisation, the order of the examples and the dropout masks). Records
fine-tuned with other hyperparameters are refused, and so are records of
other encoder shapes unless `--across_shapes` says the comparison is meant
(ELECTRA's generator, a quarter of the discriminator's width, against a
random encoder of its own width): the same seed then fixes the order of the
examples only, so such pairs remove less of the seeds' noise.

An arm given twice or more under one label (the same variant from two
records of the same settings: ELECTRA and its replicate) has that many
pretraining runs: its score on a seed is the mean over its runs, and the
t-interval of every comparison with it takes the spread between the runs in
(`paired_comparison`, `seed_statistics.two_level_interval`).

Writes `comparison.json` and `comparison.md` (each arm's task medians, with
the trivial baselines of `--glue_dir`'s dev sets when given, then the paired
tables, per task first, all over the fine-tuning seeds) in `--output_dir`,
and prints the tables.
"""

import itertools
import os
import statistics
from typing import NamedTuple, Optional

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.experiments import paired_comparison
from official_electra.experiments import study_records
from official_electra.experiments import trivial_baselines

JSON_FILE = "comparison.json"
TABLE_FILE = "comparison.md"


class RecordError(errors.UserError):
  """An arm that cannot be read or compared; the message names the fix."""


class Arm(NamedTuple):
  label: str
  record: dict  # the whole results.json
  scores: dict  # {(task, seed): score}
  step: int
  fraction: float
  train_flops: float
  finetuning: Optional[dict] = None  # this arm's recipe, if not the record's


def _runs_by_label(arms):
  """`{label: [its Arms]}` in the order the labels first come."""
  grouped = {}
  for arm in arms:
    grouped.setdefault(arm.label, []).append(arm)
  return grouped


def read_arm(spec):
  """The `Arm` of one `--arm` value."""
  parts = spec.split(",")
  if len(parts) != 4:
    raise RecordError(f"--arm={spec}: give label,results.json,variant,"
                      "fraction (e.g. first,results.json,electra,1.0)")
  label, path, variant, fraction = parts
  try:
    fraction = float(fraction)
    record = files.read_json(path)
    runs = [run for run in record["runs"] if run["variant"] == variant and
            abs(run.get("budget_fraction", run["fraction"]) - fraction) < 1e-6]
  except (OSError, ValueError, KeyError, TypeError) as error:
    raise RecordError(f"--arm={spec}: cannot read a study's results.json "
                      f"there ({error}); pass one a study wrote") from None
  if not runs:
    raise RecordError(
        f"--arm={spec}: {path} has no runs of {variant} at fraction "
        f"{fraction:g}; its variants: "
        f"{', '.join(sorted({run['variant'] for run in record['runs']}))}")
  scores = {(run["task"], run["seed"]): run["score"] for run in runs
            if run["score"] is not None}
  finetuning = (study_records.recorded_random_init_finetuning(record)
                if variant == paired_comparison.RANDOM_INIT
                else record["finetuning"])
  return Arm(label, record, scores, runs[0]["step"], fraction,
             runs[0]["train_flops"], finetuning)


def compare_arms(arms, task_names, across_shapes=False):
  """`{"arms": [...], "paired": [...]}` for arms from `read_arm`.

  Args:
    arms: two or more `Arm`s.
    task_names: the tasks compared.
    across_shapes: accept records of other encoder shapes (not of other
      fine-tuning).

  Raises:
    RecordError: arms fine-tuned otherwise, of another encoder shape (unless
      `across_shapes`), or missing a task.
  """
  first = arms[0]
  for arm in arms:
    if arm.record["finetuning"] != first.record["finetuning"]:
      raise RecordError(
          f"arm {arm.label}'s record has another finetuning than arm "
          f"{first.label}'s ({arm.record['finetuning']} against "
          f"{first.record['finetuning']}); compare records of one recipe")
    if not across_shapes and arm.record["encoder"] != first.record["encoder"]:
      raise RecordError(
          f"arm {arm.label}'s record has another encoder than arm "
          f"{first.label}'s ({arm.record['encoder']} against "
          f"{first.record['encoder']}); compare records of one encoder "
          "shape, or pass --across_shapes to compare encoders of other "
          "shapes")
    missing = [task for task in task_names
               if not any(key[0] == task for key in arm.scores)]
    if missing:
      raise RecordError(f"arm {arm.label} has no runs on "
                        f"{', '.join(missing)}; drop them from --tasks")
  grouped = _runs_by_label(arms)
  for label, runs in grouped.items():
    if len({(arm.step, arm.fraction) for arm in runs}) > 1:
      raise RecordError(
          f"arm {label} is given at other steps or fractions "
          f"({', '.join(f'step {arm.step}' for arm in runs)}); one label "
          "names pretraining runs of one variant at one budget")
  summary = []
  for label, runs in grouped.items():
    # A seed's score is the mean over the arm's runs, as the comparisons
    # take it; the median is over the seeds.
    per_seed = {}
    for task in task_names:
      seeds = set.intersection(*({seed for t, seed in arm.scores if t == task}
                                 for arm in runs))
      per_seed[task] = [statistics.fmean(arm.scores[(task, seed)]
                                         for arm in runs) for seed in seeds]
    summary.append({
        "label": label, "step": runs[0].step, "fraction": runs[0].fraction,
        "train_flops": runs[0].train_flops, "pretraining_runs": len(runs),
        "layerwise_decay_rate": (runs[0].finetuning or runs[0].record[
            "finetuning"]).get("layerwise_decay_rate"),
        "medians": {task: statistics.median(values) if values else None
                    for task, values in per_seed.items()},
        "seeds": {task: len(values) for task, values in per_seed.items()}})
  paired = []
  for a, b in itertools.combinations(grouped, 2):
    result = paired_comparison.compare(
        [arm.scores for arm in grouped[a]], [arm.scores for arm in grouped[b]],
        task_names)
    if result is not None:
      first_a, first_b = grouped[a][0], grouped[b][0]
      paired.append({"a": a, "a_step": first_a.step, "b": b,
                     "b_step": first_b.step, "fraction": first_a.fraction,
                     "train_flops": first_a.train_flops, **result})
  metric_names = {run["task"]: run["metric"] for arm in arms
                  for run in arm.record["runs"] if "metric" in run}
  return {"tasks": list(task_names), "metrics": metric_names,
          "arms": summary, "paired": paired}


def format_comparison(comparison):
  """The arms' task medians (and the baselines), then the paired tables."""
  tasks = comparison["tasks"]
  metric_names = comparison.get("metrics", {})
  mean_title = paired_comparison.mixed_mean_title(tasks, metric_names).replace(
      "mean over tasks", "mean of medians")
  lines = ["| arm | step | pretraining runs | " + " | ".join(
      task + (f" ({metric_names[task]})" if task in metric_names else "")
      for task in tasks) + f" | {mean_title} | fine-tuning's layer-wise "
           "decay |", "|" + "---|" * (len(tasks) + 5)]
  for arm in comparison["arms"]:
    medians = [arm["medians"][task] for task in tasks]
    known = [median for median in medians if median is not None]
    lines.append(
        f"| {arm['label']} | {arm['step']} | "
        f"{arm.get('pretraining_runs', 1)} | " + " | ".join(
            "-" if median is None else
            f"{100 * median:.1f} ({arm['seeds'][task]} seeds)"
            for task, median in zip(tasks, medians)) + " | " +
        (f"{100 * statistics.fmean(known):.1f}" if len(known) == len(tasks)
         else "") + f" | {arm.get('layerwise_decay_rate', '-')} |")
  baselines = comparison.get("baselines") or {}
  for name, scores in trivial_baselines.score_rows(baselines, tasks):
    lines.append(f"| baseline: {name} | | | " + " | ".join(
        "-" if scores[task] is None else f"{100 * scores[task]:.1f}"
        for task in tasks) + " | | |")
  lines += ["", "Median over the seeds of each arm's score (with two or "
            "more pretraining runs, the mean over its runs on each seed)." +
            (" Baselines: no encoder, the same dev sets (- where one does "
             "not apply)." if baselines else "")]
  if baselines:
    lines += ["", trivial_baselines.format_table(baselines, tasks)]
  return "\n".join(lines) + "\n\n" + paired_comparison.format_table(
      comparison["paired"], tasks, metric_names) + "\n"


def main(argv):
  del argv
  try:
    if len({spec.split(",")[0] for spec in flags.FLAGS.arm or []}) < 2:
      raise RecordError("give --arm values of two labels or more")
    if not flags.FLAGS.tasks or not flags.FLAGS.output_dir:
      raise RecordError("pass --tasks and --output_dir")
    comparison = compare_arms([read_arm(spec) for spec in flags.FLAGS.arm],
                              flags.FLAGS.tasks, flags.FLAGS.across_shapes)
    comparison["arm_flags"] = list(flags.FLAGS.arm)
    if flags.FLAGS.glue_dir:
      comparison["baselines"] = trivial_baselines.task_baselines(
          flags.FLAGS.glue_dir, flags.FLAGS.tasks)
    table = format_comparison(comparison)
    files.write_json(os.path.join(flags.FLAGS.output_dir, JSON_FILE),
                     comparison)
    files.write_text(os.path.join(flags.FLAGS.output_dir, TABLE_FILE), table)
    print(table)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)


def _define_flags():
  """The program's flags: defined only when it runs, so the module imports
  beside the other programs (whose flags share these names)."""
  flags.DEFINE_multi_string("arm", None, "label,results.json,variant,"
                            "fraction (repeat: two or more; a label given "
                            "again adds a pretraining run to that arm).")
  flags.DEFINE_list("tasks", None, "Tasks compared (each arm must have them).")
  flags.DEFINE_string("output_dir", None, "Where comparison.json and .md go.")
  flags.DEFINE_string("glue_dir", None, "GLUE data folder: adds the "
                      "trivial baselines of its dev sets to the table.")
  flags.DEFINE_bool("across_shapes", False, "Compare records of other "
                    "encoder shapes too (their seeds pair the examples' "
                    "order only).")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


if __name__ == "__main__":
  _define_flags()
  app.run(main)
