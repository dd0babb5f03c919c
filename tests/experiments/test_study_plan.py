"""The study's compute matching: every variant gets the same training FLOPs."""

import pytest

from official_electra.experiments import study_plan
from official_electra.modeling import encoder_config
from official_electra.training import flops

_ENCODER = encoder_config.EncoderConfig(
    vocab_size=8192, embedding_size=128, hidden_size=128, num_layers=4,
    num_attention_heads=2, intermediate_size=512, max_position_embeddings=128)
_SHARED = {"train_batch_size": 32, "max_seq_length": 128,
           "generator_hidden_fraction": 0.25, "learning_rate": 1e-3}
_ALL_VARIANTS = tuple(study_plan.DEFAULT_VARIANTS)


def _plans(budget, fractions=(0.125, 0.25, 0.5, 1.0), names=_ALL_VARIANTS):
  return study_plan.plan_pretraining(
      names, study_plan.DEFAULT_VARIANTS, _SHARED, _ENCODER, budget, fractions,
      warmup_proportion=0.1)


def test_every_variant_reaches_the_same_flops_at_each_kept_checkpoint():
  budget = 2e15
  plans = _plans(budget)
  for index, fraction in enumerate((0.125, 0.25, 0.5, 1.0)):
    achieved = [plan.train_flops_at(plan.checkpoint_steps[index])
                for plan in plans]
    assert max(achieved) / min(achieved) - 1 <= 0.01, (fraction, achieved)
    for value in achieved:
      assert abs(value / (fraction * budget) - 1) <= 0.01


def test_electra_pays_for_its_generator_so_mlm_gets_more_steps():
  electra, mlm = _plans(2e15, names=("electra", "mlm"))
  assert electra.num_train_steps < mlm.num_train_steps
  # The step costs are the FLOPs counter's, not a number of the plan's own.
  generator = _ENCODER.scaled(0.25)
  expected = flops.pretraining_flops(_ENCODER, generator, "electra", 128,
                                     19).train_per_example * 32
  assert electra.train_flops_per_step == expected
  assert mlm.train_flops_per_step == flops.pretraining_flops(
      _ENCODER, None, "mlm", 128, 19).train_per_example * 32
  # Warm-up is the same fraction of each run.
  assert electra.settings["num_warmup_steps"] == round(
      0.1 * electra.num_train_steps)
  assert mlm.settings["num_warmup_steps"] == round(0.1 * mlm.num_train_steps)


def test_a_uniform_generator_costs_no_generator_flops():
  electra, uniform = _plans(2e15, names=("electra", "uniform_generator"))
  assert uniform.train_flops_per_step < electra.train_flops_per_step
  assert uniform.settings["uniform_generator"] is True


@pytest.mark.parametrize("budget, fractions, fragment", [
    (1e12, (0.25, 1.0), "raise budget_flops"),
    (2e15, (0.5, 0.25, 1.0), "must increase"),
    (2e15, (0.25, 0.5), "end with 1.0"),
])
def test_settings_that_cannot_be_compared_fairly_are_refused(budget, fractions,
                                                             fragment):
  with pytest.raises(study_plan.StudyConfigError, match=fragment):
    _plans(budget, fractions)


def test_an_unknown_variant_names_the_known_ones():
  with pytest.raises(study_plan.StudyConfigError, match="known: .*mlm"):
    _plans(2e15, names=("electra", "bert"))
