"""The study's progress lines: the ETA weighs each task by its own cost."""

from unittest import mock

from official_electra.experiments import study_progress


def _progress(runs_left):
  lines = []
  with mock.patch("time.monotonic", return_value=0.0):
    progress = study_progress.Progress(0, runs_left, lines.append)
  return progress, lines


def test_each_task_left_is_timed_by_its_own_runs():
  progress, lines = _progress({"MRPC": 4, "SST-2": 4})
  with mock.patch("time.monotonic", return_value=0.0):
    progress.finetuned("MRPC", 2, 120.0, "MRPC done")
  # SST-2 has not run here: its time is not guessed from MRPC's.
  assert lines[-1].endswith(
      "6 fine-tuning runs left | elapsed 0.0 min, ETA 2.0 min + fine-tuning "
      "SST-2 (not timed yet)")
  with mock.patch("time.monotonic", return_value=0.0):
    progress.finetuned("SST-2", 2, 1200.0, "SST-2 done")
  # 2 MRPC runs at 1 min and 2 SST-2 runs at 10 min.
  assert lines[-1].endswith(
      "4 fine-tuning runs left | elapsed 0.0 min, ETA 22.0 min")


def test_reused_runs_leave_the_timing_alone():
  progress, lines = _progress({"CoLA": 3})
  with mock.patch("time.monotonic", return_value=0.0):
    progress.finetuned("CoLA", 1, 60.0, "first")
    progress.finetuned("CoLA", 0, 0.5, "reused")
  assert lines[-1].endswith("2 fine-tuning runs left | elapsed 0.0 min, "
                            "ETA 2.0 min")
