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

Writes `comparison.json` and `comparison.md` (each arm's task medians, then
the paired table) in `--output_dir`, and prints the table.
"""

import itertools
import os
import statistics
from typing import NamedTuple

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.experiments import paired_comparison

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
  return Arm(label, record, scores, runs[0]["step"], fraction,
             runs[0]["train_flops"])


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
  summary = [{"label": arm.label, "step": arm.step,
              "fraction": arm.fraction, "train_flops": arm.train_flops,
              "medians": {task: statistics.median(
                  score for (t, _), score in arm.scores.items() if t == task)
                          for task in task_names},
              "seeds": {task: sum(t == task for t, _ in arm.scores)
                        for task in task_names}}
             for arm in arms]
  paired = []
  for a, b in itertools.combinations(arms, 2):
    result = paired_comparison.compare(a.scores, b.scores, task_names)
    if result is not None:
      paired.append({"a": a.label, "a_step": a.step, "b": b.label,
                     "b_step": b.step, "fraction": a.fraction,
                     "train_flops": a.train_flops, **result})
  return {"tasks": list(task_names), "arms": summary, "paired": paired}


def format_comparison(comparison):
  tasks = comparison["tasks"]
  lines = ["| arm | step | " + " | ".join(tasks) + " | mean of medians |",
           "|" + "---|" * (len(tasks) + 3)]
  for arm in comparison["arms"]:
    medians = [arm["medians"][task] for task in tasks]
    lines.append(
        f"| {arm['label']} | {arm['step']} | " + " | ".join(
            f"{100 * median:.1f} ({arm['seeds'][task]} seeds)"
            for task, median in zip(tasks, medians)) +
        f" | {100 * statistics.fmean(medians):.1f} |")
  return "\n".join(lines) + "\n\n" + paired_comparison.format_table(
      comparison["paired"], tasks) + "\n"


def main(argv):
  del argv
  try:
    if not flags.FLAGS.arm or len(flags.FLAGS.arm) < 2:
      raise RecordError("give two --arm values or more")
    if not flags.FLAGS.tasks or not flags.FLAGS.output_dir:
      raise RecordError("pass --tasks and --output_dir")
    comparison = compare_arms([read_arm(spec) for spec in flags.FLAGS.arm],
                              flags.FLAGS.tasks, flags.FLAGS.across_shapes)
    comparison["arm_flags"] = list(flags.FLAGS.arm)
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
                            "fraction (repeat: two or more).")
  flags.DEFINE_list("tasks", None, "Tasks compared (each arm must have them).")
  flags.DEFINE_string("output_dir", None, "Where comparison.json and .md go.")
  flags.DEFINE_bool("across_shapes", False, "Compare records of other "
                    "encoder shapes too (their seeds pair the examples' "
                    "order only).")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


if __name__ == "__main__":
  _define_flags()
  app.run(main)
