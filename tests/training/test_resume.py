"""A stopped and restarted run continues exactly like an uninterrupted one."""

import json

import numpy as np
import tensorflow as tf

from official_electra.training import callbacks
from official_electra.training import pretraining_run
from tests.training import conftest


def _train(model_dir, data, stop_after_steps=None):
  data_dir, vocab_file, vocab_size = data
  return pretraining_run.run_pretraining(
      str(model_dir), str(data_dir), str(vocab_file),
      conftest.tiny_encoder(vocab_size, dropout_rate=0.1),
      tf.distribute.OneDeviceStrategy("/cpu:0"), num_train_steps=6,
      train_batch_size=4, max_seq_length=conftest.SEQ_LENGTH,
      generator_hidden_fraction=0.5, learning_rate=1e-3, num_warmup_steps=2,
      save_checkpoints_steps=2, steps_per_execution=1,
      stop_after_steps=stop_after_steps, shuffle_buffer_size=50, seed=7,
      progress_bar=False)


def _losses(model_dir):
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    records = [json.loads(line) for line in log_file]
  return {record["step"]: record for record in records}


def test_restart_continues_with_the_same_losses(tmp_path, pretraining_data):
  _train(tmp_path / "straight", pretraining_data)
  first = _train(tmp_path / "restarted", pretraining_data, stop_after_steps=3)
  assert first["step"] == 3
  second = _train(tmp_path / "restarted", pretraining_data)
  assert second["step"] == 6
  straight = _losses(tmp_path / "straight")
  restarted = _losses(tmp_path / "restarted")
  assert sorted(restarted) == [1, 2, 3, 4, 5, 6]
  for step in (4, 5, 6):
    for name in ("loss", "masked_lm_loss", "disc_loss", "learning_rate"):
      np.testing.assert_allclose(restarted[step][name], straight[step][name],
                                 rtol=0, atol=1e-5, err_msg=f"{name}@{step}")
  # The losses move: the comparison is not between constants.
  assert straight[4]["loss"] != straight[6]["loss"]
