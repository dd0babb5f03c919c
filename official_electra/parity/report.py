"""The parity study's table and figure, from its run records.

At each kept step and for each metric: each side's mean over its seeds, its
seed-to-seed spread (max - min over the seeds), and the gap between the two
sides' means. The gap is "within the spread" when it is at most the larger
of the two sides' spreads: the implementations differ by no more than
reruns of one of them with another seed do.
"""

import collections
import math
import os

import numpy as np

from official_electra import files

METRICS = {
    "electra": ("train_loss", "mlm_loss", "mlm_accuracy", "rtd_loss",
                "disc_auc"),
    "mlm": ("train_loss", "mlm_loss", "mlm_accuracy"),
}
LABELS = {
    "train_loss": "training loss (mean since the last kept step)",
    "mlm_loss": "generator (MLM) loss, eval",
    "mlm_accuracy": "generator (MLM) accuracy, eval",
    "rtd_loss": "discriminator loss, eval",
    "disc_auc": "discriminator AUC, eval",
}
SIDES = ("ours", "reference")


def load_records(output_dir):
  """Every run record under `output_dir/runs`."""
  folder = os.path.join(output_dir, "runs")
  if not files.exists(folder):
    return []
  return [files.read_json(os.path.join(folder, name))
          for name in sorted(files.listdir(folder)) if name.endswith(".json")]


def _values(records, objective, side, metric):
  """`{step: [value per seed]}`."""
  by_step = collections.defaultdict(list)
  for record in records:
    if record["objective"] != objective or record["side"] != side:
      continue
    for point in record["curve"]:
      value = point.get(metric)
      if value is not None and not (isinstance(value, float)
                                    and math.isnan(value)):
        by_step[point["step"]].append(value)
  return by_step


def compare(records):
  """`{objective: {metric: [row per kept step]}}`; a row has the step, each
  side's mean, spread and seed count, the gap and whether it is within the
  spread. Steps where a side has fewer than 2 seeds have no spread and are
  left out."""
  table = {}
  for objective, metrics in METRICS.items():
    if not any(record["objective"] == objective for record in records):
      continue
    table[objective] = {}
    for metric in metrics:
      sides = {side: _values(records, objective, side, metric)
               for side in SIDES}
      rows = []
      for step in sorted(set(sides["ours"]) & set(sides["reference"])):
        row = {"step": step}
        for side in SIDES:
          values = sides[side][step]
          row[side] = {"mean": float(np.mean(values)),
                       "spread": float(np.ptp(values)),
                       "seeds": len(values)}
        if min(row[side]["seeds"] for side in SIDES) < 2:
          continue
        row["gap"] = abs(row["ours"]["mean"] - row["reference"]["mean"])
        row["spread"] = max(row[side]["spread"] for side in SIDES)
        row["within"] = row["gap"] <= row["spread"]
        rows.append(row)
      table[objective][metric] = rows
  return table


def summary(table):
  """`{objective: {metric: {kept, within, max_gap, max_spread}}}`."""
  def ratio(rows):
    ratios = [row["gap"] / row["spread"] for row in rows if row["spread"] > 0]
    return float(np.median(ratios)) if ratios else None

  return {objective: {metric: {
      "kept_steps": len(rows),
      "within_spread": sum(row["within"] for row in rows),
      "max_gap": max((row["gap"] for row in rows), default=None),
      "median_gap_over_spread": ratio(rows),
  } for metric, rows in metrics.items()}
                      for objective, metrics in table.items()}


def markdown(table, records, every=500):
  """The summary table, then each metric's values every `every` steps."""
  lines = ["| objective | metric | kept steps within the seed spread | "
           "largest gap | median gap / spread |", "|---|---|---|---|---|"]
  for objective, metrics in summary(table).items():
    for metric, row in metrics.items():
      if not row["kept_steps"]:
        continue
      ratio = row["median_gap_over_spread"]
      lines.append(
          f"| {objective} | {LABELS[metric]} | {row['within_spread']} of "
          f"{row['kept_steps']} | {row['max_gap']:.4f} | "
          f"{'-' if ratio is None else f'{ratio:.2f}'} |")
  seeds = collections.defaultdict(set)
  seconds = collections.defaultdict(list)
  for record in records:
    seeds[(record["objective"], record["side"])].add(record["seed"])
    seconds[(record["objective"], record["side"])].append(record["seconds"])
  lines += ["", "| objective | side | seeds | minutes per run |",
            "|---|---|---|---|"]
  for (objective, side), seed_set in sorted(seeds.items()):
    lines.append(f"| {objective} | {side} | "
                 f"{', '.join(str(s) for s in sorted(seed_set))} | "
                 f"{np.mean(seconds[(objective, side)]) / 60:.1f} |")
  for objective, metrics in table.items():
    for metric, rows in metrics.items():
      shown = [row for row in rows if row["step"] % every == 0 or
               row is rows[-1]]
      if not shown:
        continue
      lines += ["", f"**{objective}, {LABELS[metric]}**: mean (spread) per "
                "side", "", "| step | ours | reference | gap | within |",
                "|---|---|---|---|---|"]
      for row in shown:
        lines.append(
            f"| {row['step']} | {row['ours']['mean']:.4f} "
            f"({row['ours']['spread']:.4f}) | {row['reference']['mean']:.4f} "
            f"({row['reference']['spread']:.4f}) | {row['gap']:.4f} | "
            f"{'yes' if row['within'] else 'no'} |")
  return "\n".join(lines) + "\n"


def plot(records, path):
  """Every run's curves: one panel per objective and metric, each seed a
  thin line, each side's mean a thick one."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  panels = [(objective, metric) for objective, metrics in METRICS.items()
            if any(r["objective"] == objective for r in records)
            for metric in metrics]
  columns = 4
  rows = math.ceil(len(panels) / columns)
  figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns,
                                                      3.2 * rows),
                              squeeze=False)
  colors = {"ours": "tab:blue", "reference": "tab:orange"}
  for axis, (objective, metric) in zip(axes.flat, panels):
    for side in SIDES:
      by_step = _values(records, objective, side, metric)
      if not by_step:
        continue
      for record in records:
        if record["objective"] == objective and record["side"] == side:
          points = [(p["step"], p[metric]) for p in record["curve"]
                    if p.get(metric) is not None]
          if points:
            axis.plot(*zip(*points), color=colors[side], alpha=0.35,
                      linewidth=0.8)
      steps = sorted(by_step)
      axis.plot(steps, [np.mean(by_step[s]) for s in steps],
                color=colors[side], linewidth=2,
                label=f"{side} (mean of {max(len(v) for v in by_step.values())})")
    axis.set_title(f"{objective}: {LABELS[metric]}", fontsize=9)
    axis.set_xlabel("step", fontsize=8)
    axis.tick_params(labelsize=7)
    axis.legend(fontsize=7)
  for axis in list(axes.flat)[len(panels):]:
    axis.set_visible(False)
  figure.tight_layout()
  figure.savefig(path + ".partial.png", dpi=110)
  plt.close(figure)
  os.replace(path + ".partial.png", path)


def write_report(output_dir, report_dir=None):
  """Writes `parity.json`, `parity.md` and `parity.png` to `report_dir`
  (default `output_dir`); returns the summary."""
  report_dir = report_dir or output_dir
  records = load_records(output_dir)
  table = compare(records)
  files.makedirs(report_dir)
  files.write_json(os.path.join(report_dir, "parity.json"),
                   {"summary": summary(table), "table": table})
  files.write_text(os.path.join(report_dir, "parity.md"),
                   markdown(table, records))
  if records:
    plot(records, os.path.join(report_dir, "parity.png"))
  return summary(table)
