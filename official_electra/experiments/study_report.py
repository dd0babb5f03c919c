"""The efficiency study's outputs: `results.json`, a markdown table and a PNG.

The table gives each task's median over seeds first, with the trivial
baselines of the same dev sets (`trivial_baselines`) when the record holds
them, then the mean of the task medians, whose header names the metrics it
mixes; then the paired differences per task and of the mean over tasks, over
the fine-tuning seeds (`paired_comparison`).

The figure's first panel follows the paper's (Clark et al., 2020, Figures 1
and 4): the mean over tasks of the median dev score over seeds, against
pretraining FLOPs, one line per variant; a randomly initialised encoder is
the point at zero FLOPs. Once seeds are paired, a second panel draws the
paired differences against the same FLOPs (each objective minus random init,
and objective against objective at the same fraction), each with its 95%
t-interval over the seeds: the medians alone hide how far apart the seeds
are.

A committed record is drawn again by the current code (its summary, paired
statistics and baselines recomputed from its runs; no training):

    python -m official_electra.experiments.study_report \
      --results=docs/experiments/study_full_sets/results.json \
      --glue_dir=../shared/data/glue --output_dir=DIR [--tasks=MRPC,STS-B]

writes `results.json` (the record's source and settings, the summary, the
paired rows and the baselines; not its runs), `results.md` and `results.png`.
"""

import collections
import os
import statistics

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.experiments import paired_comparison
from official_electra.experiments import training_curves
from official_electra.experiments import trivial_baselines

RESULTS_FILE = "results.json"
TABLE_FILE = "results.md"
FIGURE_FILE = "results.png"
RANDOM_INIT = "random_init"


def encoder_id(variant, step):
  """An encoder's folder under the study's `finetune/` and `probe/`, and its
  key in a record: random_init, or `<variant>_step_<step>`."""
  if variant == RANDOM_INIT:
    return RANDOM_INIT
  return f"{variant}_step_{step}"


def summarize(runs, task_names):
  """Median and spread over seeds per (variant, step, task), and task means.

  Returns:
    A list of rows `{variant, step, train_flops, fraction, scores: {task:
    {median, min, max, seeds}}, mean}` sorted by variant then FLOPs; `mean`
    is the mean of the task medians (None until every task has a score).
  """
  grouped = collections.defaultdict(list)
  first = {}
  for run in runs:
    key = (run["variant"], run["step"])
    grouped[key + (run["task"],)].append(run["score"])
    first.setdefault(key, run)
  rows = []
  for key, run in first.items():
    scores = {}
    for task in task_names:
      values = [value for value in grouped.get(key + (task,), [])
                if value is not None]
      if values:
        scores[task] = {"median": statistics.median(values),
                        "min": min(values), "max": max(values),
                        "seeds": len(values)}
    rows.append({
        "variant": run["variant"], "step": run["step"],
        "train_flops": run["train_flops"], "fraction": run["fraction"],
        "scores": scores,
        "mean": (statistics.fmean(scores[task]["median"] for task in task_names)
                 if len(scores) == len(task_names) else None),
        "disc_auc": run["pretraining"].get("disc_auc"),
        "masked_lm_accuracy": run["pretraining"].get("masked_lm_accuracy"),
    })
  rows.sort(key=lambda row: (row["variant"] != RANDOM_INIT, row["variant"],
                             row["train_flops"]))
  return rows


def format_table(results):
  """The summary as a markdown table (scores x 100, as GLUE reports them),
  then the paired differences and the probes; a study that fine-tuned
  nothing (a sweep that only probes) gets its probe tables alone."""
  tasks = results["tasks"]
  if not results["runs"]:
    lines = ["No fine-tuning runs (efficiency_study.num_seeds = 0)."]
    for table in ("probes", "selection_probes"):
      if results.get(table):
        lines += ["", format_probe_table(results, table)]
    return "\n".join(lines) + "\n"
  metric_names = {run["task"]: run["metric"] for run in results["runs"]}
  header = (["variant", "step", "train FLOPs"] +
            [f"{task} ({metric_names.get(task, '?')})" for task in tasks] +
            [paired_comparison.mixed_mean_title(tasks, metric_names)
             .replace("mean over tasks", "mean of the task medians"),
             "disc AUC", "gen/MLM acc"])
  lines = ["| " + " | ".join(header) + " |",
           "|" + "---|" * len(header)]
  for row in results["summary"]:
    cells = [row["variant"], str(row["step"]), f"{row['train_flops']:.3g}"]
    for task in tasks:
      score = row["scores"].get(task)
      cells.append("" if score is None else
                   f"{100 * score['median']:.1f} "
                   f"[{100 * score['min']:.1f}, {100 * score['max']:.1f}]")
    cells.append("" if row["mean"] is None else f"{100 * row['mean']:.1f}")
    for name in ("disc_auc", "masked_lm_accuracy"):
      cells.append("" if row[name] is None else f"{row[name]:.3f}")
    lines.append("| " + " | ".join(cells) + " |")
  baselines = results.get("baselines") or {}
  for name, scores in trivial_baselines.score_rows(baselines, tasks):
    lines.append("| " + " | ".join(
        [f"baseline: {name}", "", ""] +
        ["-" if scores[task] is None else f"{100 * scores[task]:.1f}"
         for task in tasks] + ["", "", ""]) + " |")
  seeds = _seed_counts(results["summary"], tasks)
  if seeds != str(results["num_seeds"]):
    seeds += f" (of {results['num_seeds']})"
  lines.append("")
  lines.append(f"Median over {seeds} fine-tuning seeds [min, max]; mean = mean "
               "of the task medians; disc AUC and gen/MLM acc: pretraining "
               "metrics at the checkpoint (generator accuracy for ELECTRA, "
               "the MLM's own for MLM)." +
               (" Baselines: no encoder, the same dev sets (- where one does "
                "not apply)." if baselines else ""))
  if baselines:
    lines += ["", trivial_baselines.format_table(baselines, tasks)]
  if results.get("paired"):
    lines += ["", paired_comparison.format_table(results["paired"], tasks,
                                                 metric_names)]
  if results.get("probes"):
    lines += ["", format_probe_table(results)]
  if results.get("selection_probes"):
    lines += ["", format_probe_table(results, "selection_probes")]
  return "\n".join(lines) + "\n"


_PROBE_TITLES = {
    "probes": "Linear probes of the frozen encoders (dev score x 100 of a "
              "linear model on the [CLS] state / on the mean of the token "
              "states; no fine-tuning):",
    "selection_probes": "Selection probes (the same linear models fitted on "
                        "one half of a sample of each training set and "
                        "scored x 100 on the other half; no dev data):",
}


def format_probe_table(results, table="probes"):
  """Linear probes (`results[table]`) as a markdown table (x 100)."""
  tasks = results["tasks"]
  scores = {}
  order = []
  for probe in results[table]:
    key = (probe["variant"], probe["step"], probe["train_flops"])
    if key not in scores:
      order.append(key)
    scores.setdefault(key, {})[(probe["task"], probe["feature"])] = (
        probe["score"])
  order.sort(key=lambda key: (key[0] != RANDOM_INIT, key[0], key[2]))
  header = ["variant", "step", "train FLOPs"] + tasks + ["mean"]
  lines = [_PROBE_TITLES[table], "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
  for key in order:
    cells = [key[0], str(key[1]), f"{key[2]:.3g}"]
    for task in tasks:
      first = scores[key].get((task, "first_token"))
      mean = scores[key].get((task, "mean"))
      cells.append("" if first is None or mean is None else
                   f"{100 * first:.1f} / {100 * mean:.1f}")
    # Over every task and both features; empty until all are in.
    complete = len(scores[key]) == 2 * len(tasks)
    cells.append(f"{100 * statistics.mean(scores[key].values()):.2f}"
                 if complete else "")
    lines.append("| " + " | ".join(cells) + " |")
  lines += ["", "[CLS] / mean-pooled features per task; mean: over the tasks "
            "and both features."]
  return "\n".join(lines)


def _seed_counts(rows, task_names):
  """'5', or '3-5' when the encoders have different numbers of seeds in."""
  counts = {row["scores"][task]["seeds"] for row in rows for task in task_names
            if row["scores"].get(task)}
  if not counts:
    return "0"
  low, high = min(counts), max(counts)
  return str(low) if low == high else f"{low}-{high}"


def _draw_scores(axes, results):
  rows = [row for row in results["summary"] if row["mean"] is not None]
  baseline = [row for row in rows if row["variant"] == RANDOM_INIT]
  variants = sorted({row["variant"] for row in rows} - {RANDOM_INIT})
  for variant in variants:
    points = [(row["train_flops"], 100 * row["mean"]) for row in rows
              if row["variant"] == variant]
    if baseline:
      points.insert(0, (0.0, 100 * baseline[0]["mean"]))
    axes.plot(*zip(*points), marker="o", label=variant)
  if baseline:
    axes.plot([0.0], [100 * baseline[0]["mean"]], marker="s", color="black",
              linestyle="none", label="random init")
  axes.set_xlabel("pretraining FLOPs")
  axes.set_ylabel(f"mean dev score ({', '.join(results['tasks'])})")
  axes.set_title("Dev score against pretraining compute\n"
                 f"(median of {_seed_counts(rows, results['tasks'])} seeds)")
  axes.grid(alpha=0.3)
  axes.legend()


def paired_series(paired_rows):
  """The paired rows as series to draw: {"A - B": [(FLOPs of A, mean
  difference, low, high), ...] in FLOPs order}, all x 100; the interval is
  the t-interval over seeds (the bootstrap's for a single seed, where the
  t-interval is undefined and the bootstrap is the value itself)."""
  series = {}
  for row in paired_rows:
    label = f"{row['a']} - {row['b'].replace('_', ' ')}"
    low, high = row["t_95"] or row["bootstrap_95"]
    series.setdefault(label, []).append(
        (row["train_flops"], 100 * row["mean_difference"], 100 * low,
         100 * high))
  return {label: sorted(points) for label, points in series.items()}


def _draw_paired(axes, paired_rows):
  series = paired_series(paired_rows)
  largest = max(row["train_flops"] for row in paired_rows)
  # Series side by side at each budget (1% of the axis apart), so that
  # their intervals do not hide each other.
  dodge = 0.01 * largest
  for index, (label, points) in enumerate(series.items()):
    flops, means, lows, highs = (list(column) for column in zip(*points))
    offset = (index - (len(series) - 1) / 2) * dodge
    axes.errorbar([x + offset for x in flops], means,
                  yerr=[[m - l for m, l in zip(means, lows)],
                        [h - m for m, h in zip(means, highs)]],
                  marker="o", capsize=3, label=label)
  axes.axhline(0.0, color="gray", linestyle="--", linewidth=0.8)
  # From zero FLOPs, as the scores' panel: one budget alone would otherwise
  # fill the axis with the series' dodge.
  axes.set_xlim(0.0, 1.08 * largest)
  axes.set_xlabel("pretraining FLOPs")
  axes.set_ylabel("mean paired difference (x 100)")
  axes.set_title("Paired by seed, with 95% t-intervals over the seeds")
  axes.grid(alpha=0.3)
  axes.legend(fontsize="small")


def figure(results):
  """The matplotlib figure: the scores, and the paired differences beside
  them when the record has any."""
  pyplot = training_curves.pyplot()
  panels = 2 if results.get("paired") else 1
  figure_, axes = pyplot.subplots(1, panels, figsize=(6.4 * panels, 4.2),
                                  dpi=100, squeeze=False)
  _draw_scores(axes[0][0], results)
  if panels == 2:
    _draw_paired(axes[0][1], results["paired"])
  return figure_


def plot(results):
  """PNG bytes of `figure(results)`."""
  return training_curves.figure_png(figure(results))


class ReportError(errors.UserError):
  """A record the report cannot draw; says the fix."""


def redraw(record, task_names=None, glue_dir=None, source=None):
  """A record's report drawn again by the current code: its summary and
  paired rows recomputed from its runs (on `task_names`, default its own),
  and the trivial baselines of `glue_dir`'s dev sets when given.

  Raises:
    ReportError: a task the record has no runs of.
  """
  tasks = list(task_names or record["tasks"])
  missing = [task for task in tasks if task not in record["tasks"]]
  if missing:
    raise ReportError(f"{source}: no runs of {', '.join(missing)} (its "
                      f"tasks: {', '.join(record['tasks'])}); pass --tasks "
                      "it has")
  runs = [run for run in record["runs"] if run["task"] in tasks]
  return dict(record, tasks=tasks, runs=runs, redrawn_from=source,
              summary=summarize(runs, tasks),
              paired=paired_comparison.paired_comparisons(runs, tasks),
              baselines=(trivial_baselines.task_baselines(glue_dir, tasks)
                         if glue_dir else {}))


def write_report(output_dir, results, with_runs=True):
  """Writes the JSON, the table and the figure (each through a rename); no
  figure when nothing was fine-tuned (a stale one is removed).
  `with_runs=False` leaves the runs out of the JSON (a record drawn again:
  they stay in the record itself)."""
  files.write_json(os.path.join(output_dir, RESULTS_FILE),
                   results if with_runs else
                   {key: value for key, value in results.items()
                    if key != "runs"})
  files.write_text(os.path.join(output_dir, TABLE_FILE),
                                format_table(results))
  figure_path = os.path.join(output_dir, FIGURE_FILE)
  if results["runs"]:
    training_curves.write_png(figure_path, plot(results))
  elif files.exists(figure_path):
    files.remove(figure_path)


def _define_flags():
  """The command's flags (defined only when it runs, so the module imports
  beside the other programs)."""
  flags.DEFINE_string("results", None, "A study's results.json.")
  flags.DEFINE_string("output_dir", None, "Folder for the report.")
  flags.DEFINE_list("tasks", None, "Report these tasks (default: the "
                    "record's).")
  flags.DEFINE_string("glue_dir", None, "GLUE data folder: adds the trivial "
                      "baselines of its dev sets.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def main(argv):
  del argv
  try:
    path = flags.FLAGS.results
    if not path or not files.exists(path):
      raise ReportError(f"{path}: no such file; pass --results=<a study's "
                        "results.json>")
    results = redraw(files.read_json(path), flags.FLAGS.tasks,
                     flags.FLAGS.glue_dir, path)
    files.makedirs(flags.FLAGS.output_dir)
    write_report(flags.FLAGS.output_dir, results, with_runs=False)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  print(format_table(results))


if __name__ == "__main__":
  _define_flags()
  flags.mark_flags_as_required(["results", "output_dir"])
  app.run(main)
