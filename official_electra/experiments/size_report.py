"""ELECTRA's gain against model size, from one efficiency study per size.

  python -m official_electra.experiments.size_report \
      --studies=runs/size_64,runs/size_128,runs/size_256 \
      --output_dir=docs/experiments/size_gain [--a=electra --b=mlm] \
      [--tasks=MRPC,STS-B,CoLA] [--glue_dir=../shared/data/glue]

Each study (`python -m official_electra.efficiency_study`, its own
`study_encoder.*` size) fine-tuned its variants at equal FLOPs with the same
seeds; a study folder is any folder with its `results.json` (a committed
record serves). This report takes, at each study's whole budget, the paired
difference A - B and each of A and B minus random init, computed again from
the study's runs by the current `paired_comparison` (a record's own `paired`
rows may be of older statistics): per task and of the mean over tasks, all
over the fine-tuning seeds (t-interval, bootstrap, wins/losses/ties and the
sign test), with each arm's median score per task over the seeds and the
trivial baselines of `--glue_dir`'s dev sets when given. It draws the
differences against the encoder's parameter count: the paper's worry
(Figure 4) is that ELECTRA's lead over MLM shrinks as models grow. The
studies must share the fine-tuning hyperparameters and seeds, and the tasks
compared: their own, or `--tasks`, which every study has. Writes
`size_gain.json`, `size_gain.md` and `size_gain.png` in `--output_dir`.
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
from official_electra.experiments import study_records
from official_electra.experiments import study_report
from official_electra.experiments import training_curves
from official_electra.experiments import trivial_baselines
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
  flags.DEFINE_string("glue_dir", None, "GLUE data folder: adds the trivial "
                      "baselines of its dev sets to the medians' table.")
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
  """The comparison A - B at the largest fraction of the budget the study
  kept for A (B at the same fraction, or random init), computed from its
  runs (`paired_comparison.compare`) in that order."""
  arms = paired_comparison.score_arms(results["runs"])
  fractions = sorted((fraction for variant, fraction in arms if variant == a
                      and (b == RANDOM_INIT or (b, fraction) in arms)),
                     reverse=True)
  if not fractions or (b == RANDOM_INIT and (b, 0.0) not in arms):
    raise SizeReportError(
        f"{path}: no runs of both {a} and {b}; run the study with "
        f"--variants naming both (and {RANDOM_INIT} is always there)")
  a_arm = (a, fractions[0])
  b_arm = (b, 0.0 if b == RANDOM_INIT else fractions[0])
  result = paired_comparison.compare([arms[a_arm]], [arms[b_arm]],
                                     results["tasks"])
  if result is None:
    raise SizeReportError(f"{path}: {a} and {b} share no seed scored on "
                          "every task; finish their fine-tuning first")
  step = {(run["variant"], round(run.get("budget_fraction", run["fraction"]),
                                 6)): run for run in results["runs"]}
  return {"a": a, "a_step": step[a_arm]["step"], "b": b,
          "b_step": step[b_arm]["step"], "fraction": fractions[0],
          "train_flops": step[a_arm]["train_flops"], **result}


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
                     runs=[run for run in results["runs"]
                           if run["task"] in tasks])
  if reference is not None:
    for key, fix in (("tasks", "pass --tasks that every study has"),
                     ("finetuning", "compare studies of one recipe"),
                     ("random_init_finetuning", "compare studies of one "
                      "recipe"),
                     ("num_seeds", "compare studies of one recipe")):
      value, reference_value = (
          study_records.recorded_random_init_finetuning(record)
          if key == "random_init_finetuning" else record.get(key)
          for record in (results, reference["results"]))
      if value != reference_value:
        raise SizeReportError(
            f"{path}: its {key} is {value!r}, {reference['path']}'s is "
            f"{reference_value!r}; {fix}")
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
  (on `tasks`, when given; see the module docstring), each a row of
  `paired_comparison` (per task under `tasks`)."""
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
      comparisons[name] = row
    rows.append({"study": study, "encoder": results["encoder"],
                 "metrics": {run["task"]: run["metric"]
                             for run in results["runs"] if "metric" in run},
                 "parameters": encoder_parameters(results["encoder"]),
                 "tasks": results["tasks"], "num_seeds": results["num_seeds"],
                 "medians": {variant: arm_medians(results["runs"], variant,
                                                  step, results["tasks"])
                             for variant, step in steps.items()},
                 "comparisons": comparisons})
  return sorted(rows, key=lambda row: row["parameters"])


def format_table(rows, baselines=None):
  """The rows as markdown (differences x 100): each arm's median per task
  (with the baselines), then per size the paired differences per task and
  of the mean over tasks, over the fine-tuning seeds, then the sizes side by
  side."""
  tasks = rows[0]["tasks"]
  names = list(rows[0]["comparisons"])
  lines = ["Each encoder's median over the seeds (x 100; mean: of the "
           "task medians, mixing the tasks' metrics):", "",
           "| encoder (hidden x layers) | arm | " + " | ".join(tasks)
           + " | mean |", "|---|---|" + "---|" * (len(tasks) + 1)]
  for row in rows:
    encoder = row["encoder"]
    for variant, medians in row["medians"].items():
      cells = ["-" if medians[key] is None else f"{100 * medians[key]:.1f}"
               for key in list(tasks) + ["mean"]]
      lines.append(f"| {encoder['hidden_size']} x {encoder['num_layers']} | "
                   f"{variant} | " + " | ".join(cells) + " |")
  for name, scores in trivial_baselines.score_rows(baselines or {}, tasks):
    lines.append(f"| any | baseline: {name} | " + " | ".join(
        "-" if scores[task] is None else f"{100 * scores[task]:.1f}"
        for task in tasks) + " | |")
  if baselines:
    lines += ["", trivial_baselines.format_table(baselines, tasks)]
  for row in rows:
    encoder = row["encoder"]
    lines += ["", f"Hidden {encoder['hidden_size']} x "
              f"{encoder['num_layers']} layers ({row['parameters']:,} "
              "parameters):", "",
              paired_comparison.format_table(
                  list(row["comparisons"].values()), tasks,
                  row["metrics"])]
  lines += ["", "The sizes side by side (x 100, mean over tasks of each "
            "seed's difference, mixing the tasks' metrics; 95% t-interval "
            "over the seeds; wins/losses/ties over the seeds, sign test p):",
            "",
            "| encoder (hidden x layers) | parameters | training FLOPs | "
            + " | ".join(names) + " |",
            "|---|---|---|" + "---|" * len(names)]
  for row in rows:
    cells = []
    for name in names:
      comparison = row["comparisons"][name]
      cells.append(f"{100 * comparison['mean_difference']:+.1f} "
                   f"{paired_comparison.format_interval(comparison['t_95'])}, "
                   f"{comparison['wins']}/{comparison['losses']}/"
                   f"{comparison['ties']}, "
                   f"p {comparison['sign_test_p']:.3g}")
    encoder = row["encoder"]
    flops = row["comparisons"][names[0]]["train_flops"]
    lines.append(f"| {encoder['hidden_size']} x {encoder['num_layers']} | "
                 f"{row['parameters']:,} | {flops:.3g} | "
                 + " | ".join(cells) + " |")
  return "\n".join(lines)


def plot(rows):
  """PNG bytes of each comparison against the encoder's parameters."""
  pyplot = training_curves.pyplot()
  figure, axes = pyplot.subplots(figsize=(6.4, 4.2), dpi=100)
  for name in rows[0]["comparisons"]:
    sizes = [row["parameters"] for row in rows]
    means = [100 * row["comparisons"][name]["mean_difference"] for row in rows]
    # No bar where the t-interval is undefined (a single seed).
    intervals = [row["comparisons"][name]["t_95"] or [mean / 100] * 2
                 for mean, row in zip(means, rows)]
    errors_below = [mean - 100 * low
                    for mean, (low, _) in zip(means, intervals)]
    errors_above = [100 * high - mean
                    for mean, (_, high) in zip(means, intervals)]
    axes.errorbar(sizes, means, yerr=[errors_below, errors_above],
                  marker="o", capsize=3, label=name)
  axes.axhline(0.0, color="black", linewidth=0.8)
  axes.set_xscale("log")
  axes.set_xlabel("encoder parameters")
  axes.set_ylabel("paired difference x 100 (mean over tasks)")
  axes.set_title("Gain against model size (95% t-intervals over seeds)")
  axes.grid(alpha=0.3)
  axes.legend()
  return training_curves.figure_png(figure)


def write_report(output_dir, rows, baselines=None):
  files.write_json(os.path.join(output_dir, RESULTS_FILE),
                   {"sizes": rows, "baselines": baselines or {}})
  files.write_text(os.path.join(output_dir, TABLE_FILE),
                   format_table(rows, baselines))
  training_curves.write_png(os.path.join(output_dir, FIGURE_FILE), plot(rows))


def main(argv):
  del argv
  try:
    rows = size_rows(flags.FLAGS.studies, flags.FLAGS.a, flags.FLAGS.b,
                     flags.FLAGS.tasks)
    baselines = (trivial_baselines.task_baselines(flags.FLAGS.glue_dir,
                                                  rows[0]["tasks"])
                 if flags.FLAGS.glue_dir else {})
    files.makedirs(flags.FLAGS.output_dir)
    write_report(flags.FLAGS.output_dir, rows, baselines)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  print(format_table(rows, baselines))


if __name__ == "__main__":
  _define_flags()
  flags.mark_flags_as_required(["studies", "output_dir"])
  app.run(main)
