"""The study's progress lines: each finished piece of work, with an ETA."""

import time


class Progress:
  """One line per finished piece of work, with an ETA for the whole study.

  Pretraining time is extrapolated per FLOP of pretraining left, fine-tuning
  time per run left of each task (their costs differ tenfold: SST-2's
  training set is 18 times MRPC's), each from what this process has
  measured so far.

  Args:
    pretraining_flops_left: training FLOPs still to pretrain.
    finetuning_runs_left: `{task: fine-tuning runs still to make}`.
    log: called with each line.
  """

  def __init__(self, pretraining_flops_left, finetuning_runs_left, log):
    self._pretraining_flops_left = pretraining_flops_left
    self._runs_left = dict(finetuning_runs_left)
    self._seconds_per_flop = None
    self._seconds_per_run = {}
    self._started = time.monotonic()
    self._log = log

  def pretrained(self, train_flops, seconds, what):
    self._pretraining_flops_left -= train_flops
    if train_flops:
      self._seconds_per_flop = seconds / train_flops
    self._report(what)

  def finetuned(self, task, runs, seconds, what):
    self._runs_left[task] -= runs
    if runs:
      self._seconds_per_run[task] = seconds / runs
    self._report(what)

  def restored(self, runs_by_task):
    """Runs no longer left because an earlier record holds them (untimed)."""
    for task, runs in runs_by_task.items():
      self._runs_left[task] -= runs

  def _report(self, what):
    elapsed = time.monotonic() - self._started
    pending = []
    left = 0.0
    if self._pretraining_flops_left > 0:
      if self._seconds_per_flop is None:
        pending.append("pretraining")
      else:
        left += self._pretraining_flops_left * self._seconds_per_flop
    untimed = []
    for task, runs in self._runs_left.items():
      if runs > 0 and task not in self._seconds_per_run:
        untimed.append(task)
      elif runs > 0:
        left += runs * self._seconds_per_run[task]
    if untimed:
      pending.append(f"fine-tuning {', '.join(untimed)}")
    eta = f"ETA {minutes(left)}" + (
        f" + {' and '.join(pending)} (not timed yet)" if pending else "")
    self._log(f"[study] {what} | {sum(self._runs_left.values())} fine-tuning "
              f"runs left | elapsed {minutes(elapsed)}, {eta}")


def minutes(seconds):
  return f"{seconds / 60:.1f} min"
