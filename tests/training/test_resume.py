"""A stopped and restarted run continues exactly like an uninterrupted one."""

import json

import numpy as np
import tensorflow as tf

from official_electra.training import callbacks
from tests.training import tiny_pretraining


def _logged_steps(model_dir):
  """The steps of the metrics log, in the order the runs wrote them."""
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    return [json.loads(line)["step"] for line in log_file]


def _metrics_by_step(model_dir):
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    records = [json.loads(line) for line in log_file]
  return {record["step"]: record for record in records}


def test_restart_continues_with_the_same_losses(tmp_path, pretraining_data):
  # Dropout 0.1 is on: its random state must be restored too.
  tiny_pretraining.train(tmp_path / "straight", pretraining_data)
  first = tiny_pretraining.train(tmp_path / "restarted", pretraining_data,
                                 stop_after_steps=3)
  assert first["step"] == 3
  assert _logged_steps(tmp_path / "restarted") == [1, 2, 3]
  second = tiny_pretraining.train(tmp_path / "restarted", pretraining_data)
  assert second["step"] == 6
  # The log is appended to: the second run logged steps 4 to 6 only. A run
  # that started again from step 0 would log 1, 2, 3 a second time (with the
  # same losses, the run being deterministic).
  assert _logged_steps(tmp_path / "restarted") == [1, 2, 3, 4, 5, 6]
  straight = _metrics_by_step(tmp_path / "straight")
  restarted = _metrics_by_step(tmp_path / "restarted")
  for step in (4, 5, 6):
    for name in ("loss", "masked_lm_loss", "disc_loss", "learning_rate"):
      np.testing.assert_allclose(restarted[step][name], straight[step][name],
                                 rtol=0, atol=1e-5, err_msg=f"{name}@{step}")
  # The losses move: the comparison is not between constants.
  assert straight[4]["loss"] != straight[6]["loss"]
  assert straight[6]["train_flops"] > straight[5]["train_flops"] > 0

  # --init_checkpoint: the weights, not the optimizer state or the step.
  started = tiny_pretraining.train(
      tmp_path / "initialised", pretraining_data, num_train_steps=1,
      learning_rate=0.0, init_checkpoint=str(tmp_path / "straight"))
  assert started["step"] == 1
  source = tf.train.load_checkpoint(str(tmp_path / "straight" / "ckpt-6"))
  loaded = tf.train.load_checkpoint(started["checkpoint"])
  names = [name for name in source.get_variable_to_shape_map()
           if name.startswith("model/discriminator_network/")
           and "OPTIMIZER_SLOT" not in name]
  assert names
  for name in names:
    np.testing.assert_array_equal(loaded.get_tensor(name),
                                  source.get_tensor(name), err_msg=name)


def test_accumulated_run_restarts_at_an_optimizer_step_with_the_same_losses(
    tmp_path, pretraining_data):
  # 2 micro-batches of 2 per optimizer step; dropout on.
  kwargs = dict(gradient_accumulation_steps=2, num_train_steps=5)
  tiny_pretraining.train(tmp_path / "straight", pretraining_data, **kwargs)
  first = tiny_pretraining.train(tmp_path / "restarted", pretraining_data,
                                 stop_after_steps=3, **kwargs)
  assert first["step"] == 3 and first["checkpoint"].endswith("ckpt-3")
  tiny_pretraining.train(tmp_path / "restarted", pretraining_data, **kwargs)
  # One record per optimizer step, and the rerun started at step 4.
  assert _logged_steps(tmp_path / "restarted") == [1, 2, 3, 4, 5]
  straight = _metrics_by_step(tmp_path / "straight")
  restarted = _metrics_by_step(tmp_path / "restarted")
  for step in (4, 5):
    for name in ("loss", "masked_lm_loss", "disc_loss", "learning_rate",
                 "train_flops"):
      np.testing.assert_allclose(restarted[step][name], straight[step][name],
                                 rtol=0, atol=1e-5, err_msg=f"{name}@{step}")
  assert straight[4]["loss"] != straight[5]["loss"]
  # FLOPs and the schedule count optimizer steps of the whole batch.
  assert straight[5]["train_flops"] == 5 * straight[1]["train_flops"]


def test_tensorboard_logs_hold_losses_rate_and_flops(tmp_path,
                                                     pretraining_data):
  tiny_pretraining.train(tmp_path, pretraining_data, num_train_steps=2)
  tags = set()
  for events_file in (tmp_path / "train").glob("events.out.tfevents.*"):
    for event in tf.compat.v1.train.summary_iterator(str(events_file)):
      tags.update(value.tag for value in event.summary.value)
  assert {"loss", "masked_lm_loss", "disc_auc", "learning_rate",
          "examples_per_second", "tokens_per_second", "train_flops"} <= tags
