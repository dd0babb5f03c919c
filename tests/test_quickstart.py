"""The README's first job, on a very small budget."""

import os
import shutil
import signal
import subprocess
import sys

import pytest

from official_electra import command_line
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
        process.send_signal(signal.SIGTERM)
        break
    output = process.communicate(timeout=600)[0]
  assert not any(line.startswith("== vocabulary") for line in before), before
  errors = stderr_path.read_text(encoding="utf-8")
  assert process.returncode == command_line.PREEMPTED_EXIT_STATUS, (
      errors[-3000:])
  assert ("preempted: pretraining (gin/tiny.gin) stopped on SIGTERM; "
          "finished work is kept, rerun the same command to resume") in errors
  assert "Traceback" not in errors, errors[-3000:]
  saved = [int(path.name[len("ckpt-"):-len(".index")])
           for path in (work_dir / "model").glob("ckpt-*.index")]
  assert saved and max(saved) >= 100, (saved, output[-2000:])
  assert not (work_dir / "export").exists()
