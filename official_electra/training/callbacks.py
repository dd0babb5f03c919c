"""Keras callbacks of the pretraining run: logging and divergence.

Checkpoints and SIGTERM: `preemption.CheckpointCallback`, shared with
fine-tuning.
"""

import json
import math
import os
import time

import tensorflow as tf
import tf_keras

from official_electra import errors
from official_electra import files

METRICS_LOG_FILE = "train_metrics.jsonl"


class TrainingDivergedError(errors.UserError, RuntimeError):
  """The loss became NaN or Inf."""


class TrainingLogger(tf_keras.callbacks.Callback):
  """Logs every `fit` execution (every `steps_per_execution` steps).

  Metrics are reset before each execution, so each record holds the values of
  the steps since the previous one (not a running mean since the start).
  Writes, per execution: TensorBoard scalars (`model_dir/train`), one JSON line
  in `model_dir/train_metrics.jsonl` with the step, every metric, the learning
  rate, examples/s, tokens/s (padding included), the cumulative training
  FLOPs (analytic, `training.flops`: `train_flops`) and the count they are on
  (`flops_count`, `paper` or `matmul`; logs written before the field were on
  the matmul count); and a line to stdout every `print_every_steps` steps.
  TensorBoard gets the numbers only.

  Args:
    model_dir: where logs go (None: stdout only, for non-chief workers).
    global_batch_size: examples per step.
    seq_length: tokens per example.
    train_flops: the run's `flops.TrainFlopsSchedule` (cumulative training
      FLOPs of the global batch at each step, on its `count`).
    print_every_steps: stdout cadence.
  """

  def __init__(self, model_dir, global_batch_size, seq_length,
               train_flops, print_every_steps=100):
    super().__init__()
    self._model_dir = model_dir
    self._global_batch_size = global_batch_size
    self._seq_length = seq_length
    self._train_flops = train_flops
    self._print_every_steps = max(1, print_every_steps)
    self._writer = None
    self._log_file = None
    self._last_time = None
    self._last_step = None
    self._last_printed_step = None

  def on_train_begin(self, logs=None):
    if self._model_dir:
      self._writer = tf.summary.create_file_writer(
          os.path.join(self._model_dir, "train"))
      self._log_file = files.open_file(
          os.path.join(self._model_dir, METRICS_LOG_FILE), "a")
      # A GFile opens on its first write: open it now, so the file is there
      # from the start of training (as Python's `open` would make it).
      self._log_file.write("")
      self._log_file.flush()
    self._last_step = self._last_printed_step = self._step()
    self._last_time = time.perf_counter()

  def on_train_batch_begin(self, batch, logs=None):
    self.model.reset_metrics()

  def on_train_batch_end(self, batch, logs=None):
    step = self._step()
    now = time.perf_counter()
    examples = (step - self._last_step) * self._global_batch_size
    elapsed = max(now - self._last_time, 1e-9)
    self._last_step, self._last_time = step, now
    record = {"step": step}
    record.update({name: float(value) for name, value in (logs or {}).items()})
    record["learning_rate"] = self._learning_rate(step)
    record["examples_per_second"] = examples / elapsed
    record["tokens_per_second"] = examples * self._seq_length / elapsed
    record["train_flops"] = float(self._train_flops.at(step))
    record["flops_count"] = self._train_flops.count
    if self._writer is not None:
      with self._writer.as_default(step=step):
        for name, value in record.items():
          if name not in ("step", "flops_count"):
            tf.summary.scalar(name, value)
      self._log_file.write(json.dumps(record) + "\n")
      self._log_file.flush()
    if step - self._last_printed_step >= self._print_every_steps:
      self._last_printed_step = step
      print(f"step {step}: loss={record.get('loss', math.nan):.4f} " + " ".join(
          f"{name}={value}" if isinstance(value, str) else
          f"{name}={value:.4g}" for name, value in record.items()
          if name not in ("step", "loss")), flush=True)

  def on_train_end(self, logs=None):
    if self._writer is not None:
      self._writer.close()
      self._log_file.close()

  def _step(self):
    return int(self.model.optimizer.iterations.numpy())

  def _learning_rate(self, step):
    learning_rate = self.model.optimizer.learning_rate
    if isinstance(learning_rate,
                  tf_keras.optimizers.schedules.LearningRateSchedule):
      learning_rate = learning_rate(step)
    return float(tf.convert_to_tensor(learning_rate).numpy())


class DivergenceCheck(tf_keras.callbacks.Callback):
  """Stops training with `TrainingDivergedError` on a NaN or Inf loss.

  Listed before `preemption.CheckpointCallback`, so that nothing is saved
  after the loss diverged. Keras reports a loss per execution (block of
  `steps_per_execution` steps): the weights saved at the start of the
  diverged execution produced a non-finite loss, so the checkpoints from that
  step on are deleted and the error names the last good one.

  Args:
    manager: the run's `tf.train.CheckpointManager`.
    model_dir: the run's folder, named in the error.
  """

  def __init__(self, manager, model_dir):
    super().__init__()
    self._manager = manager
    self._model_dir = model_dir
    self._previous_step = None

  def on_train_begin(self, logs=None):
    self._previous_step = self._step()

  def on_train_batch_end(self, batch, logs=None):
    step = self._step()
    loss = float((logs or {}).get("loss", 0.0))
    first_suspect_step, self._previous_step = self._previous_step, step
    if math.isfinite(loss):
      return
    good_checkpoint = _discard_checkpoints_from(self._manager,
                                                first_suspect_step)
    raise TrainingDivergedError(
        f"loss is {loss} at step {step}: training stopped; the last good "
        f"checkpoint in {self._model_dir} is "
        f"{os.path.basename(good_checkpoint) if good_checkpoint else 'none'} "
        "(later ones removed); lower the learning rate or raise the warm-up, "
        "then rerun")

  def _step(self):
    return int(self.model.optimizer.iterations.numpy())


def _discard_checkpoints_from(manager, first_bad_step):
  """Deletes checkpoints of step >= first_bad_step; returns the latest left."""
  kept = []
  for prefix in manager.checkpoints:
    if int(prefix.rsplit("-", 1)[1]) >= first_bad_step:
      for path in tf.io.gfile.glob(prefix + ".*"):
        tf.io.gfile.remove(path)
    else:
      kept.append(prefix)
  if kept:
    tf.compat.v1.train.update_checkpoint_state(manager.directory, kept[-1],
                                               all_model_checkpoint_paths=kept)
  else:
    state_file = os.path.join(manager.directory, "checkpoint")
    if tf.io.gfile.exists(state_file):
      tf.io.gfile.remove(state_file)
  return kept[-1] if kept else None
