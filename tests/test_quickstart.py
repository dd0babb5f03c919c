"""The README's first job, on a very small budget."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from official_electra import command_line
from official_electra.training import callbacks
from tests.training import tiny_pretraining


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
  work_dir = tmp_path_factory.mktemp("quickstart") / "work"
  result = subprocess.run(
      [sys.executable, "-m", "official_electra.quickstart",
       f"--work_dir={work_dir}", "--corpus_bytes=100000", "--vocab_size=500",
       "--max_seq_length=32", "--train_steps=30"],
      capture_output=True, text=True, check=False, timeout=600,
      cwd=tiny_pretraining.REPO_ROOT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  return work_dir, result


def test_quickstart_builds_data_trains_and_exports(quickstart):
  work_dir, result = quickstart
  assert result.returncode == 0, result.stderr[-3000:]
  assert "$ python -m official_electra.train --gin_file=gin/tiny.gin" in (
      result.stdout)
  # The one setting that differs from the paper's is shown in the command.
  assert "--gin_bindings=run_pretraining.temperature=2.0" in result.stdout
  summary = next(line for line in result.stdout.splitlines()
                 if line.startswith("loss "))
  first_loss = float(summary.split()[1])
  last_loss = float(summary.split("-> ")[1].split()[0])
  assert last_loss < first_loss, summary
  assert (work_dir / "model" / "ckpt-30.index").exists()
  assert (work_dir / "export" / "1" / "saved_model.pb").exists()
  assert f"training curves: {work_dir / 'training_curves.png'}" in (
      result.stdout)
  assert (work_dir / "training_curves.png").read_bytes().startswith(
      b"\x89PNG")
  final = next(line for line in result.stdout.splitlines()
               if line.startswith("discriminator over the last 10 log "))
  assert "AUC 0." in final and "precision " in final and "recall " in final
  assert "tensorflow/serving" in result.stdout


def test_sigterm_during_pretraining_is_saved_and_exit_75(quickstart, tmp_path):
  """SIGTERM to the quickstart alone reaches the running step: pretraining
  saves a checkpoint, and the quickstart exits 75 (`preempted:`) like every
  entry point, without exporting."""
  work_dir = tmp_path / "quickstart"
  # The corpus and vocabulary of the finished quickstart, which it keeps
  # (the time goes to the pretraining that is stopped here).
  work_dir.mkdir()
  for name in ("corpus.txt", "vocab.txt"):
    shutil.copy(quickstart[0] / name, work_dir / name)
  stderr_path = tmp_path / "stderr.txt"
  with open(stderr_path, "w", encoding="utf-8") as stderr:
    process = subprocess.Popen(
        [sys.executable, "-m", "official_electra.quickstart",
         f"--work_dir={work_dir}", "--corpus_bytes=100000",
         "--vocab_size=500", "--max_seq_length=32",
         "--train_steps=100000"],
        stdout=subprocess.PIPE, stderr=stderr, text=True,
        cwd=tiny_pretraining.REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    before = []
    for line in process.stdout:
      before.append(line)
      if line.startswith("step 100:"):
        break
    # Past the periodic ckpt-100 (gin/tiny.gin saves every 100 steps and logs
    # every 10): the checkpoint of the SIGTERM is then at a step of its own.
    metrics_log = work_dir / "model" / callbacks.METRICS_LOG_FILE
    deadline = time.monotonic() + 300
    while _logged_steps(metrics_log)[-1] <= 100:
      assert process.poll() is None and time.monotonic() < deadline, before
      time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=600)[0]
  assert not any(line.startswith("== vocabulary") for line in before), before
  errors = stderr_path.read_text(encoding="utf-8")
  assert process.returncode == command_line.PREEMPTED_EXIT_STATUS, (
      errors[-3000:])
  assert ("preempted: pretraining (gin/tiny.gin) stopped on SIGTERM; "
          "finished work is kept, rerun the same command to resume") in errors
  assert "Traceback" not in errors, errors[-3000:]
  saved = sorted(int(path.name[len("ckpt-"):-len(".index")])
                 for path in (work_dir / "model").glob("ckpt-*.index"))
  # Saved where the SIGTERM stopped it: the last logged step, after 100 and
  # off the periodic cadence (without the SIGTERM save, ckpt-100 would be the
  # latest and the steps after it lost).
  stopped_step = _logged_steps(metrics_log)[-1]
  assert 100 < stopped_step < 200, (stopped_step, output[-2000:])
  assert saved[-2:] == [100, stopped_step], (saved, output[-2000:])
  assert not (work_dir / "export").exists()


def _logged_steps(metrics_log):
  """The steps of a metrics log written so far ([0] before its first
  record)."""
  if not metrics_log.exists():
    return [0]
  lines = metrics_log.read_text(encoding="utf-8").splitlines()
  return [0] + [json.loads(line)["step"] for line in lines
                if line.endswith("}")]
