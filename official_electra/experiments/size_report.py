"""ELECTRA's gain against model size, from one efficiency study per size.

  python -m official_electra.experiments.size_report \
      --studies=runs/size_64,runs/size_128,runs/size_256 \
      --output_dir=docs/experiments/size_gain [--a=electra --b=mlm] \
      [--tasks=MRPC,STS-B,CoLA]

Each study (`python -m official_electra.efficiency_study`, its own
`study_encoder.*` size) has compared the variants at equal FLOPs with paired
seeds (`paired_comparison`); a study folder is any folder with its
`results.json` (a committed record serves). This report takes, at each
study's whole budget, the paired difference A - B and each of A and B minus
random init (mean over tasks of each seed's difference, its 95% bootstrap
interval, wins/losses/ties and the sign test), with each arm's median
score per task over the seeds, and draws the differences against the
encoder's parameter
count: the paper's worry (Figure 4) is that ELECTRA's lead over MLM shrinks
as models grow. The studies must share the fine-tuning hyperparameters and
seeds, and the tasks compared: their own, or `--tasks`, which every study
has (the comparisons are then made again from each study's runs on those
tasks). Writes `size_gain.json`, `size_gain.md` and `size_gain.png` in
`--output_dir`.
"""

import os
import statistics

from absl import app
from absl import flags
import tensorflow as tf

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.experiments import paired_comparison
from official_electra.experiments import study_report
from official_electra.experiments import training_curves
from official_electra.modeling import encoder_config as encoder_config_lib

RESULTS_FILE = "size_gain.json"
TABLE_FILE = "size_gain.md"
FIGURE_FILE = "size_gain.png"
RANDOM_INIT = paired_comparison.RANDOM_INIT


def _define_flags():
  """The command's flags (defined only when it runs, so tests can import
  the module beside other programs)."""
  flags.DEFINE_list("studies", None, "Output folders of efficiency studies, "
                    "one per encoder size.")
  flags.DEFINE_string("output_dir", None, "Folder for the report.")
  flags.DEFINE_string("a", "electra", "The variant whose gain is measured.")
  flags.DEFINE_string("b", "mlm", "The variant it is measured against.")
  flags.DEFINE_list("tasks", None, "Compare on these tasks, which every "
                    "study has (default: each study's own, the same for "
                    "all).")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


class SizeReportError(errors.UserError):
  """A study folder the report cannot use; says the fix."""


def encoder_parameters(encoder):
  """Parameters of an encoder described by a study's `encoder` dict."""
  config = encoder_config_lib.EncoderConfig.from_dict(encoder)
  network = encoder_config_lib.build_encoder(config)
  network({key: tf.zeros([1, 2], tf.int32) for key in
           ("input_word_ids", "input_mask", "input_type_ids")})
  return int(sum(variable.shape.num_elements()
                 for variable in network.trainable_variables))


def paired_row(results, a, b, path):
  """The comparison A - B at the study's largest kept fraction (a row of
  `paired_comparison.paired_comparisons`, its signs, wins and losses flipped,
  per task too, when the study compared B - A)."""
  rows = [row for row in results["paired"] if {row["a"], row["b"]} == {a, b}]
  if not rows:
    raise SizeReportError(
        f"{path}: no paired comparison of {a} and {b}; run the study with "
        f"--variants naming both (and {RANDOM_INIT} is always there)")
  row = max(rows, key=lambda candidate: candidate["fraction"])
  if row["a"] == a:
    return row

  def flipped(difference):
    return dict(difference, mean_difference=-difference["mean_difference"],
                wins=difference["losses"], losses=difference["wins"])

  low, high = row["bootstrap_95"]
  return dict(flipped(row), a=a, b=b, a_step=row["b_step"],
              b_step=row["a_step"],
              per_seed_mean_difference=[
                  -value for value in row["per_seed_mean_difference"]],
              bootstrap_95=[-high, -low],
              tasks={task: flipped(difference)
                     for task, difference in row["tasks"].items()})


def _read_study(study, tasks, reference):
  """A study's results, with `paired` on `tasks` when given.

  Raises:
    SizeReportError: no results, or tasks, fine-tuning or seeds that differ
      from the `reference` study's (None for the first).
  """
  path = os.path.join(study, study_report.RESULTS_FILE)
  if not files.exists(path):
    raise SizeReportError(
        f"{path}: no such file; pass the output folders of finished "
        "efficiency studies (python -m official_electra.efficiency_study)")
  results = files.read_json(path)
  if tasks:
    missing = [task for task in tasks if task not in results["tasks"]]
    if missing:
      raise SizeReportError(
          f"{path}: no runs of {', '.join(missing)} (its tasks: "
          f"{', '.join(results['tasks'])}); pass --tasks that every study "
          "has")
    if list(tasks) != list(results["tasks"]):
      results = dict(results, tasks=list(tasks),
                     paired=paired_comparison.paired_comparisons(
                         results["runs"], list(tasks)))
  if reference is not None:
    for key, fix in (("tasks", "pass --tasks that every study has"),
                     ("finetuning", "compare studies of one recipe"),
                     ("num_seeds", "compare studies of one recipe")):
      if results.get(key) != reference["results"].get(key):
        raise SizeReportError(
            f"{path}: its {key} is {results.get(key)!r}, "
            f"{reference['path']}'s is {reference['results'].get(key)!r}; "
            f"{fix}")
  return path, results


def arm_medians(runs, variant, step, tasks):
  """An encoder's median dev score over seeds per task and their mean."""
  medians = {}
  for task in tasks:
    scores = [run["score"] for run in runs
              if run["variant"] == variant and run["step"] == step
              and run["task"] == task and run["score"] is not None]
    medians[task] = statistics.median(scores) if scores else None
  known = [value for value in medians.values() if value is not None]
  medians["mean"] = (statistics.fmean(known) if len(known) == len(tasks)
                     else None)
  return medians


def size_rows(studies, a, b, tasks=None):
  """One row per study: its encoder, parameters and the three comparisons
  (on `tasks`, when given; see the module docstring)."""
  rows = []
  reference = None
  for study in studies:
    path, results = _read_study(study, tasks, reference)
    if reference is None:
      reference = {"path": path, "results": results}
    comparisons = {}
    steps = {}
    for name, (first, second) in {f"{a}-{b}": (a, b),
                                  f"{a}-{RANDOM_INIT}": (a, RANDOM_INIT),
                                  f"{b}-{RANDOM_INIT}": (b, RANDOM_INIT)
                                  }.items():
      row = paired_row(results, first, second, path)
      steps.update({first: row["a_step"], second: row["b_step"]})
      comparisons[name] = {
          key: row[key] for key in ("mean_difference", "bootstrap_95", "wins",
                                    "losses", "ties", "sign_test_p",
                                    "fraction", "train_flops")}
    rows.append({"study": study, "encoder": results["encoder"],
                 "parameters": encoder_parameters(results["encoder"]),
                 "tasks": results["tasks"], "num_seeds": results["num_seeds"],
                 "medians": {variant: arm_medians(results["runs"], variant,
                                                  step, results["tasks"])
                             for variant, step in steps.items()},
                 "comparisons": comparisons})
  return sorted(rows, key=lambda row: row["parameters"])


def format_table(rows):
  """The rows as a markdown table (differences x 100)."""
  names = list(rows[0]["comparisons"])
  lines = ["Paired differences at each study's whole budget (x 100, mean over "
           "tasks of each seed's difference, 95% bootstrap interval, "
           "wins/losses/ties over the seed and task pairs, sign test p):",
           "",
           "| encoder (hidden x layers) | parameters | training FLOPs | "
           + " | ".join(names) + " |",
           "|---|---|---|" + "---|" * len(names)]
  for row in rows:
    cells = []
    for name in names:
      comparison = row["comparisons"][name]
      low, high = comparison["bootstrap_95"]
      cells.append(f"{100 * comparison['mean_difference']:+.1f} "
                   f"[{100 * low:+.1f}, {100 * high:+.1f}], "
                   f"{comparison['wins']}/{comparison['losses']}/"
                   f"{comparison['ties']}, "
                   f"p {comparison['sign_test_p']:.3g}")
    encoder = row["encoder"]
    flops = row["comparisons"][names[0]]["train_flops"]
    lines.append(f"| {encoder['hidden_size']} x {encoder['num_layers']} | "
                 f"{row['parameters']:,} | {flops:.3g} | "
                 + " | ".join(cells) + " |")
  tasks = rows[0]["tasks"]
  lines += ["", "Each encoder's median over the seeds (x 100; mean: of the "
            "task medians):", "",
            "| encoder (hidden x layers) | arm | " + " | ".join(tasks)
            + " | mean |", "|---|---|" + "---|" * (len(tasks) + 1)]
  for row in rows:
    encoder = row["encoder"]
    for variant, medians in row["medians"].items():
      cells = ["-" if medians[key] is None else f"{100 * medians[key]:.1f}"
               for key in list(tasks) + ["mean"]]
      lines.append(f"| {encoder['hidden_size']} x {encoder['num_layers']} | "
                   f"{variant} | " + " | ".join(cells) + " |")
  return "\n".join(lines)


def plot(rows):
  """PNG bytes of each comparison against the encoder's parameters."""
  pyplot = training_curves.pyplot()
  figure, axes = pyplot.subplots(figsize=(6.4, 4.2), dpi=100)
  for name in rows[0]["comparisons"]:
    sizes = [row["parameters"] for row in rows]
    means = [100 * row["comparisons"][name]["mean_difference"] for row in rows]
    errors_below = [mean - 100 * row["comparisons"][name]["bootstrap_95"][0]
                    for mean, row in zip(means, rows)]
    errors_above = [100 * row["comparisons"][name]["bootstrap_95"][1] - mean
                    for mean, row in zip(means, rows)]
    axes.errorbar(sizes, means, yerr=[errors_below, errors_above],
                  marker="o", capsize=3, label=name)
  axes.axhline(0.0, color="black", linewidth=0.8)
  axes.set_xscale("log")
  axes.set_xlabel("encoder parameters")
  axes.set_ylabel("paired difference x 100 (mean over tasks)")
  axes.set_title("Gain against model size (95% bootstrap intervals)")
  axes.grid(alpha=0.3)
  axes.legend()
  return training_curves.figure_png(figure)


def write_report(output_dir, rows):
  files.write_json(os.path.join(output_dir, RESULTS_FILE), {"sizes": rows})
  files.write_text(os.path.join(output_dir, TABLE_FILE), format_table(rows))
  training_curves.write_png(os.path.join(output_dir, FIGURE_FILE), plot(rows))


def main(argv):
  del argv
  try:
    rows = size_rows(flags.FLAGS.studies, flags.FLAGS.a, flags.FLAGS.b,
                     flags.FLAGS.tasks)
    files.makedirs(flags.FLAGS.output_dir)
    write_report(flags.FLAGS.output_dir, rows)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  print(format_table(rows))


if __name__ == "__main__":
  _define_flags()
  flags.mark_flags_as_required(["studies", "output_dir"])
  app.run(main)
