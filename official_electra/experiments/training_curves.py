"""A pretraining run's curves as a PNG: loss, generator accuracy, disc AUC.

Reads `train_metrics.jsonl` (`training.callbacks.TrainingLogger`), which holds
one record per `fit` execution; a resumed run's log repeats the steps after its
last checkpoint, and the latest record of a step counts.
"""

import io
import json
import os

import tensorflow as tf

from official_electra import files

from official_electra.training import callbacks

FIGURE_FILE = "training_curves.png"
# (metric, axis title) of each panel, when the run logged it.
_PANELS = (("loss", "total loss"),
           ("masked_lm_accuracy", "generator MLM accuracy"),
           ("disc_auc", "discriminator AUC"))


def pyplot():
  """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=import-outside-toplevel
  return plt


def read_metrics_log(model_dir):
  """The records of `model_dir/train_metrics.jsonl`, one per step, in order."""
  by_step = {}
  path = os.path.join(model_dir, callbacks.METRICS_LOG_FILE)
  with tf.io.gfile.GFile(path) as log_file:
    for line in log_file:
      if line.strip():
        record = json.loads(line)
        by_step[record["step"]] = record
  return [by_step[step] for step in sorted(by_step)]


def plot_training_curves(records, title):
  """PNG bytes: one panel per logged metric of `_PANELS`, against the step."""
  panels = [(name, label) for name, label in _PANELS
            if any(name in record for record in records)]
  plt = pyplot()
  figure, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4),
                              dpi=100, squeeze=False)
  for axis, (name, label) in zip(axes[0], panels):
    points = [(record["step"], record[name]) for record in records
              if name in record]
    axis.plot(*zip(*points), linewidth=1.2)
    axis.set_xlabel("step")
    axis.set_title(label)
    axis.grid(alpha=0.3)
    if name == "disc_auc":
      axis.axhline(0.5, color="gray", linestyle="--", linewidth=0.8)
  figure.suptitle(title)
  return figure_png(figure)


def figure_png(figure):
  """PNG bytes of a finished matplotlib figure, which is then closed."""
  figure.tight_layout()
  buffer = io.BytesIO()
  figure.savefig(buffer, format="png")
  pyplot().close(figure)
  return buffer.getvalue()


def write_png(path, png):
  """Writes PNG bytes through a temporary file and a rename."""
  files.write_bytes(path, png)


def write_training_curves(model_dir, output_path=None, title=None):
  """Plots `model_dir`'s log into `output_path` (default beside it); returns it."""
  output_path = output_path or os.path.join(model_dir, FIGURE_FILE)
  write_png(output_path, plot_training_curves(
      read_metrics_log(model_dir), title or f"pretraining run {model_dir}"))
  return output_path
