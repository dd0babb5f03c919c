"""A Keras callback that scores the dev data after each epoch, for any task
family."""

import os
from typing import Callable

from absl import logging
import tensorflow as tf
import tf_keras


class DevMetricsCallback(tf_keras.callbacks.Callback):
  """Scores the dev data at the end of each epoch and logs the metrics.

  The metrics are added to the epoch's `logs` as `dev_<metric>` (so the
  progress bar and `History` show them) and written as TensorBoard scalars
  `dev/<metric>` to `<log_dir>/dev`. The latest values are kept in
  `latest_metrics`.

  Args:
    task_name: the task's name, for the log lines.
    evaluate_fn: `() -> {metric_key: value}` for the model's current weights
      (the task family's `evaluate`).
    log_dir: TensorBoard directory of this run.
  """

  def __init__(self, task_name: str,
               evaluate_fn: Callable[[], dict[str, float]], log_dir: str):
    super().__init__()
    self._task_name = task_name
    self._evaluate_fn = evaluate_fn
    self._writer = tf.summary.create_file_writer(os.path.join(log_dir, "dev"))
    self.latest_metrics = {}

  def evaluate(self) -> dict[str, float]:
    """Every dev metric of the task, for the current weights."""
    return self._evaluate_fn()

  def on_epoch_end(self, epoch, logs=None):
    self.latest_metrics = self.evaluate()
    with self._writer.as_default(step=epoch + 1):
      for key, value in self.latest_metrics.items():
        tf.summary.scalar(f"dev/{key}", value)
    self._writer.flush()
    logging.info("%s epoch %d dev: %s", self._task_name, epoch + 1,
                 ", ".join(f"{key}={value:.4f}"
                           for key, value in sorted(self.latest_metrics.items())))
    if logs is not None:
      logs.update({f"dev_{key}": value
                   for key, value in self.latest_metrics.items()})
