"""`python -m official_electra.finetune` survives SIGTERM and `kill -9`.

The real program runs as a subprocess on a tiny SST-2 (a tiny encoder, 480
training examples, batch 4: 240 steps over 2 epochs, a training checkpoint
every 5 steps). A run is interrupted once its first training checkpoint
exists; the rerun of the same command must resume from the latest checkpoint
(its log names the step), finish, and end with the same weights and
predictions as an uninterrupted run.
"""

import random
import signal
import subprocess
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.reliability import cli
from tests.reliability import finetune_setup

FINETUNE = "official_electra.finetune"
PREEMPTED_EXIT_STATUS = 75
_WORDS = ("the", "movie", "film", "is", "good", "great", "bad", "dull", ".")
_SAVE_EVERY_STEPS = 5
_TOTAL_STEPS = 240


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  root = tmp_path_factory.mktemp("finetune_preemption")
  finetune_setup.write_tiny_finetune_config(
      root, _WORDS, learning_rate=1e-3, max_seq_length=8, batch_size=4,
      num_train_epochs=2, save_checkpoints_steps=_SAVE_EVERY_STEPS,
      keep_checkpoint_max=2)
  rng = random.Random(0)
  task_dir = root / "glue" / "SST-2"
  task_dir.mkdir(parents=True)
  for split, size in (("train", 480), ("dev", 40)):
    rows = []
    for _ in range(size):
      label = rng.randint(0, 1)
      adjective = rng.choice(("good", "great") if label else ("bad", "dull"))
      rows.append(f"the {rng.choice(('movie', 'film'))} is {adjective} .\t{label}")
    (task_dir / f"{split}.tsv").write_text(
        "sentence\tlabel\n" + "\n".join(rows) + "\n")
  (task_dir / "test.tsv").write_text(
      "index\tsentence\n0\tthe movie is good .\n1\tthe film is dull .\n")
  return root


def _args(root, name):
  return (FINETUNE, "--task=SST-2", f"--glue_dir={root / 'glue'}",
          f"--vocab_file={root / 'vocab.txt'}",
          f"--gin_file={root / 'tiny.gin'}", f"--model_dir={root / name}")


def _train_checkpoint_dir(root, name):
  return root / name / "SST-2" / "seed_0" / "train_checkpoints"


def _interrupt_once_checkpointed(root, name, signal_number):
  """Starts a run, sends `signal_number` once it has saved a training
  checkpoint, and returns the finished process and its stderr."""
  process = cli.start(*_args(root, name))
  state_file = _train_checkpoint_dir(root, name) / "checkpoint"
  deadline = time.monotonic() + 240
  while not state_file.exists():
    assert process.poll() is None, process.stderr.read()[-3000:]
    assert time.monotonic() < deadline, "no training checkpoint appeared"
    time.sleep(0.02)
  process.send_signal(signal_number)
  _, stderr = process.communicate(timeout=120)
  return process, stderr


def _latest_step(checkpoint_dir):
  prefix = tf.train.latest_checkpoint(str(checkpoint_dir))
  assert prefix, f"no checkpoint in {checkpoint_dir}"
  return int(prefix.rsplit("-", 1)[1])


def _assert_resumed_and_finished(root, name, resumed):
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert "resuming from step" in resumed.stderr
  assert (root / name / "eval_results.json").is_file()
  assert (root / name / "submission" / "SST-2.tsv").is_file()
  # Once the seed is done its training checkpoints are deleted.
  assert not _train_checkpoint_dir(root, name).exists()


def _final_weights(root, name):
  reader = tf.train.load_checkpoint(
      str(root / name / "SST-2" / "seed_0" / "checkpoint" / "classifier"))
  return {key: reader.get_tensor(key)
          for key in reader.get_variable_to_shape_map()
          if "classifier/" in key and "OPTIMIZER_SLOT" not in key}


@pytest.fixture(scope="module")
def uninterrupted(root):
  """A run that is not interrupted, started in the background."""
  return cli.run_all({"uninterrupted": _args(root, "uninterrupted")})[
      "uninterrupted"]


def _assert_same_result_as_uninterrupted(root, name, uninterrupted):
  completed = uninterrupted.result()
  assert completed.returncode == 0, completed.stderr[-3000:]
  expected = _final_weights(root, "uninterrupted")
  actual = _final_weights(root, name)
  assert expected and set(actual) == set(expected)
  for key, value in expected.items():
    np.testing.assert_array_equal(actual[key], value, err_msg=key)
  assert ((root / name / "submission" / "SST-2.tsv").read_text() ==
          (root / "uninterrupted" / "submission" / "SST-2.tsv").read_text())


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_the_rerun_resumes(root, uninterrupted):
  process, stderr = _interrupt_once_checkpointed(root, "sigterm",
                                                 signal.SIGTERM)
  assert process.returncode == PREEMPTED_EXIT_STATUS, stderr[-3000:]
  lines = [line for line in stderr.splitlines() if line.strip()]
  assert lines[-1].startswith("preempted: SIGTERM: SST-2 seed 0 stopped at step ")
  assert "rerun the same command to resume" in lines[-1]
  assert "Traceback" not in stderr
  step = _latest_step(_train_checkpoint_dir(root, "sigterm"))
  assert 0 < step < _TOTAL_STEPS
  # The checkpoint was written on SIGTERM, not only periodically.
  assert f"stopped at step {step} of {_TOTAL_STEPS}" in lines[-1]
  assert not list((root / "sigterm").rglob("eval_results.json"))

  resumed = cli.run(*_args(root, "sigterm"))
  _assert_resumed_and_finished(root, "sigterm", resumed)
  assert f"resuming from step {step} of {_TOTAL_STEPS}" in resumed.stderr
  _assert_same_result_as_uninterrupted(root, "sigterm", uninterrupted)
  # A finished seed is not rerun.
  again = cli.run(*_args(root, "sigterm"))
  assert again.returncode == 0, again.stderr[-3000:]
  assert "already done" in again.stderr
  assert "resuming from step" not in again.stderr


@pytest.mark.slow
def test_kill_9_resumes_from_the_last_periodic_checkpoint(root, uninterrupted):
  process, _ = _interrupt_once_checkpointed(root, "kill", signal.SIGKILL)
  assert process.returncode == -signal.SIGKILL
  checkpoint_dir = _train_checkpoint_dir(root, "kill")
  step = _latest_step(checkpoint_dir)
  assert step % _SAVE_EVERY_STEPS == 0 and 0 < step < _TOTAL_STEPS
  # A save cut short by a kill leaves files that the state file does not
  # name; the rerun must ignore them.
  (checkpoint_dir / f"ckpt-{step + 1}.data-00000-of-00001").write_bytes(
      b"half-written")

  resumed = cli.run(*_args(root, "kill"))
  _assert_resumed_and_finished(root, "kill", resumed)
  assert f"resuming from step {step} of {_TOTAL_STEPS}" in resumed.stderr
  _assert_same_result_as_uninterrupted(root, "kill", uninterrupted)
