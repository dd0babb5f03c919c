"""`python -m official_electra.train`: preemption, divergence, a changed
architecture, and the bfloat16 and XLA paths (a gin typo:
tests/reliability/test_pretraining_data_bad_inputs.py)."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.training import callbacks
from tests.training import tiny_pretraining
from tests.training.conftest import pretraining_data  # noqa: F401  fixture

_TIMEOUT_SECONDS = 300
_ENVIRONMENT = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def _command(data, model_dir, *bindings):
  data_dir, vocab_file, vocab_size = data
  seq_length = tiny_pretraining.SEQ_LENGTH
  gin_bindings = [
      f"encoder.vocab_size={vocab_size}",
      f"encoder.max_position_embeddings={seq_length}",
      f"run_pretraining.max_seq_length={seq_length}",
      "run_pretraining.train_batch_size=4",
      "run_pretraining.steps_per_execution=1",
      "run_pretraining.print_every_steps=1",
      "run_pretraining.save_checkpoints_steps=1", *bindings]
  return ([sys.executable, "-u", "-m", "official_electra.train",
           "--gin_file=gin/tiny.gin", f"--train_data={data_dir}",
           f"--vocab_file={vocab_file}", f"--model_dir={model_dir}",
           "--noprogress_bar"] +
          [f"--gin_bindings={binding}" for binding in gin_bindings])


def _run(command):
  return subprocess.run(command, capture_output=True, text=True, check=False,
                        timeout=_TIMEOUT_SECONDS, cwd=tiny_pretraining.REPO_ROOT,
                        env=_ENVIRONMENT)


def _start(command, output=subprocess.PIPE):
  """Starts `command` as `_run` does; stdout and stderr go to `output` (by
  default a pipe, `process.stdout`, to read while it runs)."""
  return subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                          text=True, cwd=tiny_pretraining.REPO_ROOT,
                          env=_ENVIRONMENT)


def _logged_steps(model_dir):
  with open(os.path.join(model_dir, callbacks.METRICS_LOG_FILE)) as log_file:
    return [json.loads(line)["step"] for line in log_file]


def _printed_steps(stdout):
  """The steps of a run's `step N: loss=...` lines."""
  return [int(line.split(":")[0].split()[1]) for line in stdout.splitlines()
          if line.startswith("step ")]


def _assert_same_weights(actual_prefix, expected_prefix):
  """The model's weights and the optimizer's slots of two checkpoints agree
  within 1e-5."""
  expected = tf.train.load_checkpoint(str(expected_prefix))
  actual = tf.train.load_checkpoint(str(actual_prefix))
  names = [name for name in expected.get_variable_to_shape_map()
           if name.startswith(("model/", "optimizer/"))]
  assert len(names) > 50
  for name in names:
    np.testing.assert_allclose(actual.get_tensor(name),
                               expected.get_tensor(name), rtol=0, atol=1e-5,
                               err_msg=name)


def test_sigterm_saves_and_the_rerun_resumes(tmp_path, pretraining_data):
  model_dir = tmp_path / "run"
  # No periodic save: a checkpoint can only come from the SIGTERM handler.
  process = _start(_command(pretraining_data, model_dir,
                            "run_pretraining.num_train_steps=100000",
                            "run_pretraining.save_checkpoints_steps=100000"))
  for line in process.stdout:
    if line.startswith("step 2:"):
      process.send_signal(signal.SIGTERM)
      break
  output = process.communicate(timeout=_TIMEOUT_SECONDS)[0]
  # Saved, not done: the exit status of every entry point after SIGTERM.
  assert process.returncode == 75, output[-3000:]
  assert "preempted: SIGTERM at step" in output
  stopped_step = int(output.split("preempted: SIGTERM at step ")[1].split(";")[0])
  assert stopped_step >= 2
  assert sorted(path.name for path in model_dir.glob("ckpt-*.index")) == [
      f"ckpt-{stopped_step}.index"]
  assert (model_dir / "config.gin").read_text().count("run_pretraining.") > 5

  rerun = _run(_command(pretraining_data, model_dir,
                        "run_pretraining.num_train_steps=100000",
                        f"run_pretraining.stop_after_steps={stopped_step + 2}"))
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert f"stopped at step {stopped_step + 2}" in rerun.stdout
  # The rerun starts after the saved step (a restart from step 0 would log
  # steps 1, 2, ... again).
  assert _printed_steps(rerun.stdout) == [stopped_step + 1,
                                         stopped_step + 2], rerun.stdout
  steps = _logged_steps(model_dir)
  assert steps[-2:] == [stopped_step + 1, stopped_step + 2]
  assert steps.count(1) == 1

  changed = _run(_command(pretraining_data, model_dir,
                          "run_pretraining.num_train_steps=100000",
                          "encoder.num_layers=3"))
  assert changed.returncode == 1
  assert changed.stderr.strip().splitlines()[-1].startswith("error: ")
  assert "encoder.num_layers: checkpoint 2, config 3" in changed.stderr
  assert "Traceback" not in changed.stderr


def test_nan_loss_stops_naming_the_step_and_keeps_the_good_checkpoint(
    tmp_path, pretraining_data):
  model_dir = tmp_path / "run"
  result = _run(_command(pretraining_data, model_dir,
                         "run_pretraining.num_train_steps=20",
                         "run_pretraining.num_warmup_steps=4",
                         "run_pretraining.learning_rate=1e12"))
  assert result.returncode == 1, result.stdout[-2000:]
  message = result.stderr.strip().splitlines()[-1]
  assert message.startswith(("error: loss is nan at step ",
                             "error: loss is inf at step ")), message
  bad_step = int(message.split(" at step ")[1].split(":")[0])
  good_name = message.split("last good checkpoint in ")[1].split()[2]
  good_step = int(good_name.split("-")[1])
  # The weights of a good checkpoint gave a finite loss on the next step;
  # the checkpoint before the diverged step did not, so it is gone.
  assert good_step < bad_step - 1
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(good_name)
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    losses = {record["step"]: record["loss"]
              for record in map(json.loads, log_file)}
  assert np.isfinite(losses[good_step + 1])
  assert not np.isfinite(losses[bad_step])
  assert not list(model_dir.glob(f"ckpt-{bad_step - 1}.*"))


@pytest.mark.parametrize("policy,jit_compile", [("mixed_bfloat16", False),
                                                ("float32", True)])
def test_bfloat16_and_xla_runs_train_with_finite_losses(
    tmp_path, pretraining_data, policy, jit_compile):
  tf_keras.mixed_precision.set_global_policy(policy)
  try:
    result = tiny_pretraining.train(tmp_path, pretraining_data,
                                    num_train_steps=3, mixed_precision=policy,
                                    jit_compile=jit_compile)
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
  assert result["step"] == 3
  with open(tmp_path / callbacks.METRICS_LOG_FILE) as log_file:
    losses = [json.loads(line)["loss"] for line in log_file]
  assert len(losses) == 3 and np.all(np.isfinite(losses))


def test_kill_9_then_rerun_ends_with_the_weights_of_an_uninterrupted_run(
    tmp_path, pretraining_data):
  bindings = ("run_pretraining.num_train_steps=8",
              "run_pretraining.save_checkpoints_steps=2")
  straight = _start(_command(pretraining_data, tmp_path / "straight",
                             *bindings), output=subprocess.DEVNULL)
  killed = _start(_command(pretraining_data, tmp_path / "killed", *bindings))
  for line in killed.stdout:
    if line.startswith("step 5:"):  # ckpt-4 written, step 5 not saved.
      killed.kill()
      break
  killed.communicate(timeout=_TIMEOUT_SECONDS)
  assert killed.returncode == -signal.SIGKILL
  # ckpt-4 is written before "step 5:" is printed; a descheduled parent may
  # let the child save ckpt-6 before the kill lands. Either way the rerun
  # must resume from an unfinished run.
  latest = tf.train.latest_checkpoint(str(tmp_path / "killed"))
  assert latest.endswith(("ckpt-4", "ckpt-6")), latest
  saved_step = int(latest.rsplit("-", 1)[1])
  killed_steps = _logged_steps(tmp_path / "killed")
  rerun = _run(_command(pretraining_data, tmp_path / "killed", *bindings))
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  # The rerun ran only the steps after the checkpoint (a run started again
  # from step 0 would end with the same weights, the run being
  # deterministic, but would log steps 1, 2, ... again).
  expected = list(range(saved_step + 1, 9))
  assert _printed_steps(rerun.stdout) == expected, rerun.stdout[-3000:]
  assert _logged_steps(tmp_path / "killed") == killed_steps + expected
  assert straight.wait(timeout=_TIMEOUT_SECONDS) == 0
  _assert_same_weights(tmp_path / "killed" / "ckpt-8",
                       tmp_path / "straight" / "ckpt-8")
