"""The objective specs: one per objective, read wherever objectives differ."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling import model_config
from official_electra.modeling import objectives
from official_electra.modeling.models import electra_model
from official_electra.modeling.models import electra_pretrainer
from official_electra.optimization import optimizer_factory
from official_electra.training import flops
from tests.modeling import tiny


def test_every_objective_has_one_spec_and_unknown_names_fail_in_one_line():
  assert objectives.OBJECTIVES == (
      "electra", "mlm", "electra_15", "replace_mlm", "all_tokens_mlm",
      "two_stage", "adversarial")
  assert electra_pretrainer.OBJECTIVES == objectives.OBJECTIVES
  assert objectives.get(None).name == "electra"
  spec = objectives.get("adversarial")
  assert objectives.get(spec) is spec
  with pytest.raises(objectives.ObjectiveError) as raised:
    objectives.get("electra_20")
  assert str(raised.value) == (
      f"unknown objective 'electra_20'; choose one of {objectives.OBJECTIVES}")


# What the paper's objectives train (Clark et al., 2020, Sections 2, 3.2, 3.3).
@pytest.mark.parametrize("name, heads, generator_heads", [
    ("electra", ("discriminator",), ("discriminator", "generator")),
    ("mlm", ("mlm",), ("mlm",)),
    ("electra_15", ("discriminator",), ("discriminator", "generator")),
    ("replace_mlm", ("mlm",), ("generator", "mlm")),
    ("all_tokens_mlm", ("copy", "mlm"), ("copy", "generator", "mlm")),
    ("two_stage", ("discriminator", "mlm"),
     ("discriminator", "generator", "mlm")),
    ("adversarial", ("discriminator", "reinforce_baseline"),
     ("discriminator", "generator", "reinforce_baseline")),
])
def test_the_heads_each_objective_trains(name, heads, generator_heads):
  spec = objectives.get(name)
  assert spec.heads(False) == heads
  expected = heads if name == "mlm" else generator_heads
  assert spec.heads(spec.has_generator_network()) == expected


def test_generator_sizes_and_samplers():
  encoder = tiny.TINY
  assert objectives.get("mlm").generator_config(encoder, 0.5, 1.0) is None
  assert objectives.get("two_stage").generator_config(encoder, 0.5,
                                                      1.0) == encoder
  assert objectives.get("electra").generator_config(
      encoder, 0.5, 1.0) == encoder.scaled(0.5, 1.0)
  assert objectives.get("electra").generator_config(
      encoder, 0.5, 1.0, uniform_generator=True) is None
  assert not objectives.get("two_stage").ties_embeddings
  assert [name for name, spec in objectives.SPECS.items()
          if not spec.samples_replacements] == ["mlm"]


@pytest.mark.parametrize("name, settings, fragment", [
    ("electra", {"uniform_generator": True, "unigram_generator": True},
     "choose one"),
    ("mlm", {"unigram_generator": True}, "unset one of objective='mlm'"),
    ("electra", {"unigram_generator": True, "disallow_correct": True},
     "does not take disallow_correct"),
    ("mlm", {"uniform_generator": True}, "samples nothing"),
    ("adversarial", {"unigram_generator": True}, "trains its generator"),
    ("two_stage", {"uniform_generator": True,
                   "two_stage_generator_steps": 2}, "trains its generator"),
    ("two_stage", {}, "needed by, and only by"),
    ("electra", {"two_stage_generator_steps": 2}, "needed by, and only by"),
    ("two_stage", {"two_stage_generator_steps": 10}, "leaves no step"),
    ("two_stage", {"two_stage_generator_steps": 2,
                   "generator_hidden_fraction": 0.5}, "discriminator's size"),
    ("electra_15", {"adversarial_mle_steps": 3}, "objective='adversarial'"),
])
def test_settings_an_objective_cannot_use_fail_in_one_line(name, settings,
                                                            fragment):
  with pytest.raises(objectives.ObjectiveError, match=fragment) as raised:
    objectives.get(name).check_settings(num_train_steps=10, **settings)
  assert "\n" not in str(raised.value)


@pytest.mark.parametrize("name, settings", [
    ("electra", {"unigram_generator": True}),
    ("electra_15", {"uniform_generator": True, "disallow_correct": True}),
    ("two_stage", {"two_stage_generator_steps": 4}),
    ("adversarial", {"adversarial_mle_steps": 3}),
    ("mlm", {}),
])
def test_settings_an_objective_uses_pass(name, settings):
  objectives.get(name).check_settings(num_train_steps=10, **settings)


def test_a_new_objective_is_one_spec():
  # Adversarial ELECTRA with the discriminator's loss on the masked slots
  # only: a combination no objective has, described by its spec alone.
  spec = objectives.ObjectiveSpec(
      "adversarial_15", objectives.DETECTS_REPLACEMENTS,
      sampler=objectives.GENERATOR_NETWORK, rtd_on_masked_only=True,
      reinforce=True)
  config = model_config.pretraining_model_config(
      tiny.TINY, spec, 0.5, 1.0, False, False,
      {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}, True, 24)
  assert config.heads == ("discriminator", "generator", "reinforce_baseline")
  pretrainer = electra_pretrainer.ElectraPretrainer(
      model=electra_model.ElectraModel.from_config(config),
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      max_predictions_per_seq=4, objective=spec, seed=1)
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 1e-3, 10, 0))
  batch = tiny.batch()
  outputs = pretrainer(batch, training=False)
  # The RTD loss is weighted on the masked slots only, as ELECTRA 15%'s.
  weights = outputs["discriminator_weights"].numpy()
  assert weights.sum() == outputs["masked_weights"].numpy().sum() > 0
  history = pretrainer.fit(tf.data.Dataset.from_tensors(batch).repeat(),
                           steps_per_epoch=2, verbose=0).history
  assert np.isfinite(history["loss"]).all()
  assert {"disc_auc", "masked_lm_accuracy", "adversarial_reward",
          "baseline_loss"} <= set(history)
  seq, slots = 24, 4
  assert flops.pretraining_flops(
      tiny.TINY, tiny.TINY.scaled(0.5), spec, seq, slots).forward_per_example \
      == flops.pretraining_flops(tiny.TINY, tiny.TINY.scaled(0.5),
                                 "adversarial", seq, slots).forward_per_example
  assert dataclasses.replace(spec, reinforce=False).heads(True) == (
      "discriminator", "generator")
