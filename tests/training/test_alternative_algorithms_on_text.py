"""Two-Stage and Adversarial ELECTRA pretrain the tiny config on real text (a
docstring corpus) with finite, falling losses."""

import json
import statistics

import numpy as np

from official_electra.training import callbacks
from tests.training import tiny_pretraining

_STEPS = 40


def _records(model_dir):
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    return [json.loads(line) for line in log_file]


def _falls(records, name, what):
  values = [record[name] for record in records]
  assert np.isfinite(values).all(), (what, values)
  first, last = statistics.fmean(values[:5]), statistics.fmean(values[-5:])
  assert last < first, (what, name, first, last)


def test_two_stage_on_text(tmp_path, pretraining_data):
  tiny_pretraining.train(
      tmp_path, pretraining_data, num_train_steps=_STEPS,
      objective="two_stage", two_stage_generator_steps=_STEPS // 2,
      generator_hidden_fraction=1.0, num_warmup_steps=2, learning_rate=2e-3)
  records = _records(tmp_path)
  assert [record["step"] for record in records] == list(range(1, _STEPS + 1))
  _falls(records[:_STEPS // 2], "masked_lm_loss", "stage 1")
  _falls(records[_STEPS // 2:], "disc_loss", "stage 2")


def test_adversarial_on_text(tmp_path, pretraining_data):
  tiny_pretraining.train(
      tmp_path, pretraining_data, num_train_steps=_STEPS,
      objective="adversarial", adversarial_mle_steps=10, num_warmup_steps=2,
      learning_rate=2e-3)
  records = _records(tmp_path)
  assert len(records) == _STEPS
  _falls(records, "loss", "adversarial")
  _falls(records, "disc_loss", "adversarial")
  _falls(records, "baseline_loss", "adversarial")
  for record in records:
    assert 0 <= record["masked_lm_accuracy"] <= 1
    assert np.isfinite(record["adversarial_reward"])
