"""Two-Stage ELECTRA (Clark et al., 2020, Section 3.3) in the pretrainer: what
each stage trains, and the switch between them.

Stage 1 trains a masked LM alone (here the discriminator tower with its MLM
head); the switch makes the generator a copy of it, so that the discriminator
starts equal to the generator; stage 2 trains the discriminator alone with
the RTD loss while the generator stays frozen.
"""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling import encoder_config
from official_electra.modeling.models import electra_pretrainer
from official_electra.modeling.models import two_stage
from official_electra.optimization import optimizer_factory
from tests.modeling import tiny


def _two_stage(seed=1):
  config = tiny.TINY
  discriminator = encoder_config.build_encoder(
      config, encoder_config.build_embeddings(config), "discriminator")
  # Its own embeddings: the two towers are the same size but not tied.
  generator = encoder_config.build_encoder(config, None, "generator")
  pretrainer = electra_pretrainer.ElectraPretrainer(
      tiny.model("two_stage", discriminator, generator),
      mask_token_id=tiny.MASK_ID,
      excluded_token_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=4,
      objective="two_stage", seed=seed)
  pretrainer.compile(optimizer=optimizer_factory.create_optimizer(
      "adamw", 1e-2, 100, 0))
  pretrainer(tiny.batch(), training=False)
  return pretrainer


def _fit(pretrainer, steps=3):
  dataset = tf.data.Dataset.from_tensors(tiny.batch()).repeat()
  return pretrainer.fit(dataset, steps_per_epoch=steps, verbose=0).history


def _values(variables):
  return [variable.numpy().copy() for variable in variables]


def _generator_variables(pretrainer):
  return (pretrainer.generator_network.weights
          + two_stage.head_weights(pretrainer.generator_head))


def _changed(before, variables):
  return [not np.array_equal(old, variable.numpy())
          for old, variable in zip(before, variables)]


def test_stage_one_trains_the_masked_lm_alone():
  pretrainer = _two_stage()
  assert pretrainer.current_stage == electra_pretrainer.GENERATOR_STAGE
  generator = _generator_variables(pretrainer)
  head = pretrainer.discriminator_head.weights
  tower = pretrainer.discriminator_network.trainable_weights
  mlm_head = two_stage.head_weights(pretrainer.main_mlm_head)
  before = [_values(group) for group in (generator, head, tower, mlm_head)]
  history = _fit(pretrainer)
  assert not any(_changed(before[0], generator))
  assert not any(_changed(before[1], head))
  assert all(_changed(before[2], tower))
  assert all(_changed(before[3], mlm_head))
  # Only the masked LM's metrics are reported in stage 1.
  assert "masked_lm_loss" in history and "disc_auc" not in history
  np.testing.assert_allclose(history["loss"], history["masked_lm_loss"],
                             rtol=1e-6)


def test_the_switch_makes_the_discriminator_equal_to_the_generator():
  pretrainer = _two_stage()
  _fit(pretrainer)
  pretrainer.start_discriminator_stage()
  assert pretrainer.current_stage == electra_pretrainer.DISCRIMINATOR_STAGE
  tower_pairs = list(zip(pretrainer.generator_network.weights,
                         pretrainer.discriminator_network.weights))
  assert len(tower_pairs) == len(pretrainer.discriminator_network.weights) > 20
  for generator_weight, discriminator_weight in tower_pairs:
    np.testing.assert_array_equal(generator_weight.numpy(),
                                  discriminator_weight.numpy())
  for generator_weight, mlm_weight in zip(
      two_stage.head_weights(pretrainer.generator_head),
      two_stage.head_weights(pretrainer.main_mlm_head)):
    np.testing.assert_array_equal(generator_weight.numpy(), mlm_weight.numpy())
  # Copies, not shared variables: the embeddings stay two tables.
  assert (pretrainer.generator_network.embedding_layer is not
          pretrainer.discriminator_network.embedding_layer)
  with pytest.raises(ValueError, match="already begun"):
    pretrainer.start_discriminator_stage()


def test_stage_two_leaves_every_generator_variable_unchanged():
  pretrainer = _two_stage()
  _fit(pretrainer)
  pretrainer.start_discriminator_stage()
  generator = _generator_variables(pretrainer)
  generator_before = _values(generator)
  tower = pretrainer.discriminator_network.trainable_weights
  head = pretrainer.discriminator_head.trainable_weights
  tower_before, head_before = _values(tower), _values(head)
  history = _fit(pretrainer)
  assert not any(_changed(generator_before, generator))
  assert all(_changed(head_before, head))
  assert all(_changed(tower_before, tower))
  # The RTD loss alone (weighted 50) makes the total.
  np.testing.assert_allclose(history["loss"],
                             50.0 * np.asarray(history["disc_loss"]),
                             rtol=1e-4)
  assert "masked_lm_accuracy" in history and "disc_auc" in history


def test_two_stage_needs_untied_towers_and_a_generator():
  config = tiny.TINY
  embeddings = encoder_config.build_embeddings(config)
  discriminator = encoder_config.build_encoder(config, embeddings, "d")
  tied = encoder_config.build_encoder(config, embeddings, "g")
  with pytest.raises(ValueError, match="own embeddings"):
    electra_pretrainer.ElectraPretrainer(
        tiny.model("two_stage", discriminator, tied),
        mask_token_id=tiny.MASK_ID,
        excluded_token_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=4,
        objective="two_stage")
  with pytest.raises(ValueError, match="pass generator_network"):
    electra_pretrainer.ElectraPretrainer(
        tiny.model("two_stage", discriminator, None),
        mask_token_id=tiny.MASK_ID,
        excluded_token_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=4,
        objective="two_stage", uniform_generator=True)


def test_copy_refuses_towers_of_different_sizes():
  small = encoder_config.build_encoder(tiny.TINY.scaled(0.5), None, "g")
  large = encoder_config.build_encoder(tiny.TINY, None, "d")
  for network in (small, large):
    ids = tf.zeros([1, 8], tf.int32)
    network({"input_word_ids": ids, "input_mask": tf.ones_like(ids),
             "input_type_ids": ids})
  with pytest.raises(ValueError, match="discriminator's size"):
    two_stage.copy_network_weights(large, small)
