"""Two-Stage ELECTRA as one run (`run_pretraining(objective="two_stage")`):
the stage is saved with each checkpoint, a run stopped in either stage (or at
the switch, before it happened) resumes in that stage with the losses of an
uninterrupted run, each stage has its own learning-rate schedule, and the
logged FLOPs follow each stage's cost."""

import json

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.layers import dynamic_masking
from official_electra.training import callbacks
from official_electra.training import flops
from official_electra.training import pretraining_run
from tests.training import tiny_pretraining

_SWITCH = 4
_STEPS = 8
_TWO_STAGE = {"objective": "two_stage", "two_stage_generator_steps": _SWITCH,
              "generator_hidden_fraction": 1.0, "num_warmup_steps": 2}
_STAGE_KEY = "model/stage/.ATTRIBUTES/VARIABLE_VALUE"


def _records(model_dir):
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    return [json.loads(line) for line in log_file]


def _stage(checkpoint):
  return int(tf.train.load_checkpoint(str(checkpoint)).get_tensor(_STAGE_KEY))


def _train(model_dir, data, **kwargs):
  return tiny_pretraining.train(model_dir, data, num_train_steps=_STEPS,
                                **_TWO_STAGE, **kwargs)


def _tower(checkpoint, tower):
  reader = tf.train.load_checkpoint(str(checkpoint))
  prefix = f"model/{tower}_network/"
  return {name[len(prefix):]: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()
          if name.startswith(prefix) and "OPTIMIZER_SLOT" not in name}


def test_a_run_stopped_in_each_stage_resumes_in_that_stage(
    tmp_path, pretraining_data):
  straight = tmp_path / "straight"
  _train(straight, pretraining_data)
  stopped = tmp_path / "stopped"
  # In stage 1, at the switch (saved before it happens), in stage 2, the end.
  for stop, stage in ((2, 1), (_SWITCH, 1), (6, 2), (None, 2)):
    result = _train(stopped, pretraining_data, stop_after_steps=stop)
    assert result["step"] == (stop or _STEPS)
    assert _stage(result["checkpoint"]) == stage
  # Each rerun started at the step its checkpoint held: no step twice.
  assert [record["step"] for record in _records(stopped)] == list(
      range(1, _STEPS + 1))
  expected = _records(straight)
  for record, reference in zip(_records(stopped), expected):
    for name in ("loss", "masked_lm_loss", "learning_rate", "train_flops"):
      np.testing.assert_allclose(record[name], reference[name], rtol=0,
                                 atol=1e-5, err_msg=f"{name}@{record['step']}")
    if record["step"] > _SWITCH:
      np.testing.assert_allclose(record["disc_loss"], reference["disc_loss"],
                                 rtol=0, atol=1e-5)
  # The losses move: the comparison is not between constants.
  assert expected[0]["loss"] != expected[_SWITCH - 1]["loss"]
  assert expected[_SWITCH]["disc_loss"] != expected[-1]["disc_loss"]


def test_stages_switch_weights_schedule_and_flops(tmp_path, pretraining_data):
  result = _train(tmp_path, pretraining_data)
  assert result["step"] == _STEPS
  records = _records(tmp_path)
  # Stage 1 logs the masked LM only; stage 2 the discriminator as well.
  assert all("disc_auc" not in record for record in records[:_SWITCH])
  assert all("disc_auc" in record for record in records[_SWITCH:])
  for record in records:
    assert np.isfinite(record["loss"])
  # The generator is the masked LM of stage 1 at the switch, then frozen.
  at_switch = _tower(tmp_path / f"ckpt-{_SWITCH}", "discriminator")
  for step in (6, 8):
    generator = _tower(tmp_path / f"ckpt-{step}", "generator")
    assert generator.keys() == at_switch.keys() and len(generator) > 20
    for name, value in generator.items():
      np.testing.assert_array_equal(value, at_switch[name], err_msg=name)
  moved = _tower(tmp_path / f"ckpt-{_STEPS}", "discriminator")
  assert any(not np.array_equal(moved[name], at_switch[name])
             for name in at_switch)
  # Each stage warms up and decays on its own: step 5 is stage 2's step 1.
  rates = [record["learning_rate"] for record in records]
  np.testing.assert_allclose(rates[_SWITCH:], rates[:_SWITCH], rtol=1e-6)
  assert rates[1] > rates[0] and rates[_SWITCH - 1] < rates[1]
  # FLOPs: stage 1 costs a masked LM's step, stage 2 the frozen generator's
  # forward pass and the discriminator's training.
  encoder = tiny_pretraining.tiny_encoder(pretraining_data[2])
  seq = tiny_pretraining.SEQ_LENGTH
  predictions = dynamic_masking.max_predictions_per_seq(seq, 0.15)
  stage_one = 4 * flops.pretraining_flops(
      encoder, None, "two_stage", seq, predictions, stage=1).train_per_example
  stage_two = 4 * flops.pretraining_flops(
      encoder, encoder, "two_stage", seq, predictions,
      stage=2).train_per_example
  assert stage_one == 4 * flops.pretraining_flops(
      encoder, None, "mlm", seq, predictions).train_per_example
  increments = np.diff([0.0] + [record["train_flops"] for record in records])
  np.testing.assert_allclose(increments[:_SWITCH], stage_one)
  np.testing.assert_allclose(increments[_SWITCH:], stage_two)
  assert stage_two > stage_one


@pytest.mark.parametrize("settings, fragment", [
    ({"objective": "two_stage", "generator_hidden_fraction": 1.0},
     "two_stage_generator_steps"),
    ({"two_stage_generator_steps": 3}, "only by, objective='two_stage'"),
    ({**_TWO_STAGE, "generator_hidden_fraction": 0.5},
     "generator_hidden_fraction = 1.0"),
    ({**_TWO_STAGE, "two_stage_generator_steps": _STEPS}, "leaves no step"),
    ({**_TWO_STAGE, "uniform_generator": True}, "unset"),
    ({"adversarial_mle_steps": 2}, "objective='adversarial'"),
])
def test_settings_that_cannot_work_fail_first(tmp_path, pretraining_data,
                                              settings, fragment):
  with pytest.raises(pretraining_run.TrainingConfigError, match=fragment):
    tiny_pretraining.train(tmp_path, pretraining_data,
                           num_train_steps=_STEPS, **settings)
  assert not list(tmp_path.glob("ckpt-*"))
