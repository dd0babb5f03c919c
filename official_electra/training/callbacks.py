"""Keras callbacks of the pretraining run: logging and checkpointing."""

import json
import math
import os
import time

from absl import logging
import tensorflow as tf
import tf_keras

from official_electra import errors
from official_electra import files
from official_electra import preemption

METRICS_LOG_FILE = "train_metrics.jsonl"


class TrainingDivergedError(errors.UserError, RuntimeError):
  """The loss became NaN or Inf."""


class TrainingLogger(tf_keras.callbacks.Callback):
  """Logs every `fit` execution (every `steps_per_execution` steps).

  Metrics are reset before each execution, so each record holds the values of
  the steps since the previous one (not a running mean since the start).
  Writes, per execution: TensorBoard scalars (`model_dir/train`), one JSON line
  in `model_dir/train_metrics.jsonl` with the step, every metric, the learning
  rate, examples/s, tokens/s (padding included) and the cumulative training
  FLOPs (analytic, `training.flops`); and a line to stdout every
  `print_every_steps` steps.

  Args:
    model_dir: where logs go (None: stdout only, for non-chief workers).
    global_batch_size: examples per step.
    seq_length: tokens per example.
    train_flops: the run's `flops.TrainFlopsSchedule` (cumulative training
      FLOPs of the global batch at each step).
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
    if self._writer is not None:
      with self._writer.as_default(step=step):
        for name, value in record.items():
          if name != "step":
            tf.summary.scalar(name, value)
      self._log_file.write(json.dumps(record) + "\n")
      self._log_file.flush()
    if step - self._last_printed_step >= self._print_every_steps:
      self._last_printed_step = step
      print(f"step {step}: loss={record.get('loss', math.nan):.4f} " + " ".join(
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


class CheckpointSaver(tf_keras.callbacks.Callback):
  """Saves every `save_every_steps`, on SIGTERM, and at the end; stops on NaN.

  - A checkpoint is written at the end of the first `fit` execution (block
    of `steps_per_execution` steps) at or after each multiple of
    `save_every_steps`, and at the end.
  - SIGTERM (preemption): the handler only sets a flag; after the running
    execution, a checkpoint is written and training stops (`preempted`).
  - A NaN or Inf loss stops training without saving (`diverged_at_step`).
    The weights saved at the start of the diverged execution produced a
    non-finite loss: `first_suspect_step` is that step, and checkpoints from
    it on are not good ones (the caller discards them).
  - `stop_after_steps`: stop (with a checkpoint) once the step counter reaches
    it, for time-sliced jobs and restart tests.

  Args:
    manager: a `tf.train.CheckpointManager` whose `step_counter` is the
      optimizer's iteration count.
    save_every_steps: checkpoint cadence.
    stop_after_steps: optional step at which to end this run early.
  """

  def __init__(self, manager, save_every_steps, stop_after_steps=None):
    super().__init__()
    self._manager = manager
    self._save_every_steps = save_every_steps
    self._stop_after_steps = stop_after_steps
    self._sigterm = preemption.SigtermFlag()
    self._last_saved_step = None
    self.preempted = False
    self._previous_step = None
    self.diverged_at_step = None
    self.diverged_loss = None
    self.first_suspect_step = None

  def on_train_begin(self, logs=None):
    self._last_saved_step = self._previous_step = self._step()
    self._sigterm.__enter__()

  def on_train_batch_end(self, batch, logs=None):
    step = self._step()
    loss = float((logs or {}).get("loss", 0.0))
    previous_step, self._previous_step = self._previous_step, step
    if not math.isfinite(loss):
      self.diverged_at_step, self.diverged_loss = step, loss
      self.first_suspect_step = previous_step
      self.model.stop_training = True
      return
    if self._sigterm.received:
      logging.warning("SIGTERM: saving a checkpoint at step %d and stopping",
                      step)
      self.preempted = True
      self.model.stop_training = True
      self._save(step)
      return
    if step // self._save_every_steps > self._last_saved_step // self._save_every_steps:
      self._save(step)
    if self._stop_after_steps is not None and step >= self._stop_after_steps:
      self.model.stop_training = True

  def on_train_end(self, logs=None):
    self._sigterm.__exit__(None, None, None)
    step = self._step()
    if self.diverged_at_step is None and step != self._last_saved_step:
      self._save(step)

  def _save(self, step):
    self._manager.save(checkpoint_number=step)
    self._last_saved_step = step

  def _step(self):
    return int(self.model.optimizer.iterations.numpy())
