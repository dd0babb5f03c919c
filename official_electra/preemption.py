"""Preemption, the same for every program: SIGTERM only sets a flag, the
running step finishes, a checkpoint is written, and `Preempted` carries its
step and prefix to the entry point, which prints `preempted: ...` and exits
with `command_line.PREEMPTED_EXIT_STATUS` (75); rerunning the same command
resumes from that checkpoint.

Pretraining (`training/callbacks.CheckpointSaver`), fine-tuning
(`finetuning/resumable_training.CheckpointCallback`) and the efficiency study
use these two pieces; each keeps its own checkpoint contents (what a resumed
run needs to compute what an uninterrupted one computes).
"""

import signal
import threading
from typing import Optional


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
  comes back on exit.
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
