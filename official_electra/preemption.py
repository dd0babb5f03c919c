"""Resume and preemption, the same for every program.

A run saves `ckpt-<step>` checkpoints numbered by the optimizer step
(`StepCheckpoints`); rerunning the same command restores the latest and
continues. `CheckpointCallback` is the one Keras callback that saves them,
used by pretraining (`training/pretraining_run.py`) and fine-tuning
(`finetuning/trainer.py`): at the first `fit` execution (block of
`steps_per_execution` steps) that reaches each multiple of `save_every_steps`,
and on SIGTERM. The caller saves the last step with `finish`.

Preemption: SIGTERM only sets a flag (`SigtermFlag`, installed around
training); the running execution finishes, a checkpoint is written, and
`Preempted` carries its step and prefix up to the entry point (pretraining,
fine-tuning, the efficiency study, the quickstart), which prints
`preempted: ...` and exits with `command_line.PREEMPTED_EXIT_STATUS` (75).
Each run keeps its own checkpoint contents (what a resumed run needs to
compute what an uninterrupted one computes).
"""

import signal
import threading
from typing import Optional

import tf_keras


class Preempted(Exception):
  """Stopped on SIGTERM after writing a checkpoint; rerun to resume.

  Attributes:
    step: the optimizer step the checkpoint holds (None when unknown).
    checkpoint: the checkpoint's prefix (None when unknown).
  """

  def __init__(self, message, step: Optional[int] = None,
               checkpoint: Optional[str] = None):
    super().__init__(message)
    self.step = step
    self.checkpoint = checkpoint


class SigtermFlag:
  """A context in which SIGTERM sets `received` instead of ending the process.

  Python delivers signals to the main thread only; in another thread the
  context changes nothing (SIGTERM keeps its handler). The previous handler
  comes back on exit. The context may be entered again; `received` stays set.
  """

  def __init__(self):
    self.received = False
    self._previous_handler = None
    self._installed = False

  def _on_sigterm(self, signum, frame):
    del signum, frame
    self.received = True

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
      self._installed = True
    return self

  def __exit__(self, *exc_info):
    if self._installed:
      # None: the previous handler was not set from Python (the default).
      signal.signal(signal.SIGTERM, signal.SIG_DFL
                    if self._previous_handler is None
                    else self._previous_handler)
      self._installed = False
    return False


class StepCheckpoints:
  """Checkpoints numbered by the optimizer step: `<directory>/ckpt-<step>`.

  Atomicity: `tf.train.CheckpointManager` writes a checkpoint's data files,
  then its index, then rewrites the `checkpoint` state file through a rename,
  and only then deletes checkpoints beyond `max_to_keep`. A kill during a
  save leaves the state file naming the previous checkpoint, which is
  complete.

  Args:
    manager: a `tf.train.CheckpointManager` of the model, its optimizer and
      whatever else a resumed run needs.
    step_counter: the optimizer's step counter (`optimizer.iterations`).
    save_every_steps: the cadence of `CheckpointCallback`'s periodic saves.
  """

  def __init__(self, manager, step_counter, save_every_steps):
    self.manager = manager
    self._step_counter = step_counter
    self.save_every_steps = save_every_steps

  @property
  def step(self) -> int:
    """Optimizer steps taken so far."""
    return int(self._step_counter.numpy())

  @property
  def latest(self) -> Optional[str]:
    """The prefix of the latest complete checkpoint, or None."""
    return self.manager.latest_checkpoint

  def save(self) -> str:
    """Saves the current step unless it is already the latest; its prefix."""
    latest = self.manager.latest_checkpoint
    if latest and latest.endswith(f"-{self.step}"):
      return latest
    return self.manager.save(checkpoint_number=self.step)


class CheckpointCallback(tf_keras.callbacks.Callback):
  """Saves periodically; on SIGTERM saves and raises `Preempted`.

  Keras calls back at the end of each `fit` execution (block of
  `steps_per_execution` steps). A checkpoint is saved at the end of the first
  execution at or after each multiple of `save_every_steps` (block 3, cadence
  5: steps 6, 12, 15, 21, ...). When `sigterm` has received a SIGTERM, the
  execution's end is saved instead and `Preempted` is raised out of `fit`.
  The end of training is the caller's to save, with `finish`.

  Args:
    checkpoints: the run's `StepCheckpoints`.
    sigterm: the `SigtermFlag` the caller enters around `fit`.
    run_name: names the run in the preemption message when a program runs
      several (`SST-2 seed 0`); None for a program's one run.
    total_steps: the run's optimizer steps, named with `run_name`.
  """

  def __init__(self, checkpoints, sigterm, run_name=None, total_steps=None):
    super().__init__()
    self._checkpoints = checkpoints
    self._sigterm = sigterm
    self._run_name = run_name
    self._total_steps = total_steps
    self._previous_step = None

  def on_train_begin(self, logs=None):
    self._previous_step = self._checkpoints.step

  def on_train_batch_end(self, batch, logs=None):
    if self._sigterm.received:
      self.raise_preempted()
    step = self._checkpoints.step
    every = self._checkpoints.save_every_steps
    if step // every > self._previous_step // every:
      self._checkpoints.save()
    self._previous_step = step

  def finish(self):
    """Saves the end of training; raises `Preempted` if a SIGTERM came after
    the last execution's check."""
    self._checkpoints.save()
    if self._sigterm.received:
      self.raise_preempted()

  def raise_preempted(self):
    """Saves a checkpoint and raises `Preempted` naming its step and prefix."""
    prefix = self._checkpoints.save()
    step = self._checkpoints.step
    if self._run_name is None:
      stopped = f"SIGTERM at step {step}; checkpoint {prefix}"
    else:
      stopped = (f"SIGTERM: {self._run_name} stopped at step {step} of "
                 f"{self._total_steps}, checkpoint {prefix}")
    raise Preempted(f"{stopped}; rerun the same command to resume from it",
                    step, prefix)
