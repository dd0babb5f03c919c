"""A Keras callback that scores the dev sets with GLUE's metrics after each epoch."""

import os
from typing import Mapping

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from official_electra.finetuning import tasks


def predictions_from_outputs(task: tasks.GlueTask, outputs: np.ndarray,
                             score_multiplier: float = 1.0) -> np.ndarray:
  """Class ids `[n]` (argmax of the logits) or scores `[n]` from `[n, num_outputs]`.

  `score_multiplier` turns a regression output into the task's score units
  (5 for a model trained on STS-B's scores divided by 5).
  """
  if task.is_regression:
    return outputs[:, 0] * score_multiplier
  return np.argmax(outputs, axis=-1)


class DevMetricsCallback(tf_keras.callbacks.Callback):
  """Predicts every dev split at the end of each epoch and logs GLUE's metrics.

  The metrics are added to the epoch's `logs` as `dev_<metric>` (so the
  progress bar and `History` show them) and written as TensorBoard scalars to
  `<log_dir>/dev`. The latest values are kept in `latest_metrics`.

  Args:
    task: the GLUE task.
    dev_sets: `{dev_split: (features dataset, labels [n])}`, unshuffled and
      batched, yielding only features.
    log_dir: TensorBoard directory of this run.
    score_multiplier: regression outputs times this are the scores
      (`predictions_from_outputs`).
  """

  def __init__(self, task: tasks.GlueTask,
               dev_sets: Mapping[str, tuple[tf.data.Dataset, np.ndarray]],
               log_dir: str, score_multiplier: float = 1.0):
    super().__init__()
    self._task = task
    self._dev_sets = dev_sets
    self._score_multiplier = score_multiplier
    self._writer = tf.summary.create_file_writer(os.path.join(log_dir, "dev"))
    self.latest_metrics = {}

  def evaluate(self) -> dict[str, float]:
    """Every metric of the task on every dev split, for the current weights."""
    results = {}
    for split, (dataset, labels) in self._dev_sets.items():
      outputs = self.model.predict(dataset, verbose=0)
      results.update(self._task.compute_metrics(
          split, labels, predictions_from_outputs(self._task, outputs,
                                                  self._score_multiplier)))
    return results

  def on_epoch_end(self, epoch, logs=None):
    self.latest_metrics = self.evaluate()
    with self._writer.as_default(step=epoch + 1):
      for key, value in self.latest_metrics.items():
        tf.summary.scalar(f"glue/{key}", value)
    self._writer.flush()
    logging.info("%s epoch %d dev: %s", self._task.name, epoch + 1,
                 ", ".join(f"{key}={value:.4f}"
                           for key, value in sorted(self.latest_metrics.items())))
    if logs is not None:
      logs.update({f"dev_{key}": value
                   for key, value in self.latest_metrics.items()})
