"""The study's compute matching: every variant gets the same training FLOPs."""

import dataclasses

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


def test_the_paper_count_plans_by_default_and_the_matmul_count_the_records():
  # The committed study (docs/experiments/study_full_sets/results.json): its
  # encoder on its 7,985-token vocabulary, 3e14 FLOPs, batch 64 of 64 tokens.
  encoder = dataclasses.replace(_ENCODER, vocab_size=7985,
                                max_position_embeddings=64)
  shared = dict(_SHARED, train_batch_size=64, max_seq_length=64)

  def plans(**count):
    return study_plan.plan_pretraining(
        ("electra", "mlm"), study_plan.DEFAULT_VARIANTS, shared, encoder,
        3e14, (0.2, 0.5, 1.0), warmup_proportion=0.1, **count)
  recorded = plans(flops_count="matmul")
  assert [(plan.flops_count, plan.num_train_steps, plan.checkpoint_steps)
          for plan in recorded] == [("matmul", 11278, (2256, 5639, 11278)),
                                    ("matmul", 12231, (2446, 6116, 12231))]
  # On the paper's axis an ELECTRA step costs about 1.55 MLM steps.
  paper = plans()
  assert [(plan.flops_count, plan.num_train_steps) for plan in paper] == [
      ("paper", 5774), ("paper", 8931)]
  assert paper[0].train_flops_per_step == flops.pretraining_flops(
      encoder, encoder.scaled(0.25), "electra", 64, 9,
      count="paper").train_per_example * 64


def test_an_unknown_flops_count_is_refused():
  with pytest.raises(study_plan.StudyConfigError,
                     match="flops_count = 'measured'.*'paper', 'matmul'"):
    study_plan.plan_pretraining(
        ("electra",), study_plan.DEFAULT_VARIANTS, _SHARED, _ENCODER, 2e15,
        (1.0,), warmup_proportion=0.1, flops_count="measured")
