"""The encoder network: parameter counts, sharing, SavedModel, config."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling import encoder_config
from official_electra.modeling.layers import discriminator_head
from tests.modeling import tiny

SIZES = {
    # Encoder plus discriminator head, as transformers' ElectraForPreTraining.
    "small": (encoder_config.EncoderConfig(), 13_549_057),
    "base": (encoder_config.EncoderConfig(
        embedding_size=768, hidden_size=768, num_attention_heads=12,
        intermediate_size=3072), 109_483_009),
    "large": (encoder_config.EncoderConfig(
        embedding_size=1024, hidden_size=1024, num_layers=24,
        num_attention_heads=16, intermediate_size=4096), 335_142_913),
}


def count(variables):
  return sum(int(np.prod(variable.shape)) for variable in variables)


def discriminator_parameter_count(config):
  encoder = encoder_config.build_encoder(config)
  head = discriminator_head.DiscriminatorHead(config.hidden_size)
  head(encoder(tiny_inputs(1, 2))["sequence_output"])
  return count(encoder.trainable_variables) + count(head.trainable_variables)


def tiny_inputs(batch_size, seq_len):
  ones = tf.ones([batch_size, seq_len], tf.int32)
  return {"input_word_ids": ones, "input_mask": ones,
          "input_type_ids": tf.zeros_like(ones)}


@pytest.mark.parametrize("size", sorted(SIZES))
def test_parameter_count_equals_the_published_one(size):
  config, expected = SIZES[size]
  assert discriminator_parameter_count(config) == expected


@pytest.mark.parametrize("size", sorted(SIZES))
def test_parameter_count_equals_transformers(size):
  torch = pytest.importorskip("torch")
  transformers = pytest.importorskip("transformers")
  config, _ = SIZES[size]
  hf_config = transformers.ElectraConfig(
      vocab_size=config.vocab_size, embedding_size=config.embedding_size,
      hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
      num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size,
      max_position_embeddings=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size)
  with torch.device("meta"):
    model = transformers.ElectraForPreTraining(hf_config)
  hf_count = sum(p.numel() for p in model.parameters())
  assert discriminator_parameter_count(config) == hf_count


def test_shared_embeddings_are_one_set_of_variables_in_a_checkpoint(tmp_path):
  pretrainer = tiny.pretrainer("electra")
  pretrainer(tiny.batch())
  generator_table = pretrainer.generator_network.get_embedding_table()
  assert generator_table is pretrainer.discriminator_network.get_embedding_table()
  path = tf.train.Checkpoint(model=pretrainer).write(str(tmp_path / "ckpt"))
  stored = [name for name, shape in tf.train.list_variables(path)
            if tuple(shape) == (tiny.TINY.vocab_size, tiny.TINY.embedding_size)
            and "OPTIMIZER" not in name]
  assert len(stored) == 1, stored
  # The generator has its own projection; the discriminator none (E == H/2).
  assert pretrainer.generator_network.embedding_projection is None
  assert pretrainer.discriminator_network.embedding_projection is not None


def test_untied_generator_has_its_own_embeddings():
  pretrainer = tiny.pretrainer("electra", untied_generator_embeddings=True)
  pretrainer(tiny.batch())
  assert (pretrainer.generator_network.get_embedding_table() is not
          pretrainer.discriminator_network.get_embedding_table())


def test_generator_scaling_follows_the_original():
  small = encoder_config.EncoderConfig()
  generator = small.scaled(0.25)
  assert (generator.hidden_size, generator.intermediate_size,
          generator.num_attention_heads) == (64, 256, 1)
  base = dataclasses.replace(small, hidden_size=768, intermediate_size=3072,
                             num_attention_heads=12)
  assert base.scaled(1 / 3).hidden_size == 256
  assert base.scaled(1 / 3).num_attention_heads == 4
  assert small.scaled(1.0) == small


def _original_generator_config(bert_config, hidden_fraction, layers_fraction):
  """The generator's config as the original derives it, restated.

  google-research/electra run_pretraining.py, `get_generator_config`: a copy
  of the discriminator's BertConfig with hidden and layers rounded times
  their fractions, `intermediate_size = 4 * hidden` and
  `num_attention_heads = max(1, hidden // 64)`.
  """
  generator = dict(bert_config)
  generator["hidden_size"] = int(round(bert_config["hidden_size"]
                                       * hidden_fraction))
  generator["num_layers"] = int(round(bert_config["num_layers"]
                                      * layers_fraction))
  generator["intermediate_size"] = 4 * generator["hidden_size"]
  generator["num_attention_heads"] = max(1, generator["hidden_size"] // 64)
  return generator


@pytest.mark.parametrize("hidden_fraction", [1 / 8, 0.25, 1 / 3, 0.5, 0.75,
                                             1.0])
@pytest.mark.parametrize("layers_fraction", [0.5, 1.0])
@pytest.mark.parametrize("discriminator", [
    encoder_config.EncoderConfig(),
    SIZES["base"][0],
    SIZES["large"][0],
    # gin/tiny.gin and gin/experiments/cpu_efficiency.gin's study_encoder:
    # FFN and heads that are not 4 x hidden and hidden / 64.
    encoder_config.EncoderConfig(embedding_size=32, hidden_size=64,
                                 num_layers=2, num_attention_heads=2,
                                 intermediate_size=128),
    encoder_config.EncoderConfig(hidden_size=128, num_layers=4,
                                 num_attention_heads=2, intermediate_size=512),
    encoder_config.EncoderConfig(hidden_size=512, num_attention_heads=8,
                                 intermediate_size=2048),
], ids=["small", "base", "large", "tiny_gin", "cpu_efficiency", "medium"])
def test_generator_config_equals_the_originals_formula(
    discriminator, hidden_fraction, layers_fraction):
  expected = _original_generator_config(dataclasses.asdict(discriminator),
                                        hidden_fraction, layers_fraction)
  generator = discriminator.scaled(hidden_fraction, layers_fraction)
  assert dataclasses.asdict(generator) == expected


def test_generator_shapes_of_the_paper_sizes_and_the_study_are_unchanged():
  # (hidden, FFN, heads, layers) as the previous rule (FFN and heads times
  # the fraction) gave them: the new rule must not change these models.
  small, base, large = (SIZES[name][0] for name in ("small", "base", "large"))
  study = encoder_config.EncoderConfig(hidden_size=128, num_layers=4,
                                       num_attention_heads=2,
                                       intermediate_size=512)
  def shape(config):
    return (config.hidden_size, config.intermediate_size,
            config.num_attention_heads, config.num_layers,
            config.embedding_size)
  assert shape(small.scaled(0.25)) == (64, 256, 1, 12, 128)
  assert shape(small.scaled(1.0)) == (256, 1024, 4, 12, 128)  # Small++.
  assert shape(base.scaled(1 / 3)) == (256, 1024, 4, 12, 768)
  assert shape(large.scaled(0.25)) == (256, 1024, 4, 24, 1024)
  assert shape(study.scaled(0.25)) == (32, 128, 1, 4, 128)


def test_padding_does_not_change_real_positions():
  encoder = encoder_config.build_encoder(tiny.TINY)
  inputs = tiny.batch(batch_size=1, seq_len=10, padded_rows=1, real_len=6)
  first = encoder(inputs)["sequence_output"].numpy()
  changed = dict(inputs)
  changed["input_word_ids"] = tf.where(
      inputs["input_mask"] > 0, inputs["input_word_ids"], 9)
  second = encoder(changed)["sequence_output"].numpy()
  np.testing.assert_allclose(first[:, :6], second[:, :6], atol=1e-5)


def test_saved_model_round_trip_gives_identical_outputs(tmp_path):
  config = dataclasses.replace(tiny.TINY, dropout_rate=0.1)
  encoder = encoder_config.build_encoder(config)
  inputs = tiny.batch(batch_size=3, seq_len=12, padded_rows=1, real_len=7)
  expected = encoder(inputs)["sequence_output"].numpy()
  tf_keras.models.save_model(encoder, str(tmp_path / "encoder"))
  restored = tf_keras.models.load_model(str(tmp_path / "encoder"))
  np.testing.assert_array_equal(
      restored(inputs, training=False)["sequence_output"].numpy(), expected)


def test_variable_length_and_tf_function():
  encoder = encoder_config.build_encoder(tiny.TINY)
  call = tf.function(lambda inputs: encoder(inputs)["sequence_output"],
                     reduce_retracing=True)
  for seq_len in (4, 9, 32):
    assert call(tiny_inputs(2, seq_len)).shape == (2, seq_len,
                                                   tiny.TINY.hidden_size)


def test_get_config_round_trip():
  encoder = encoder_config.build_encoder(tiny.TINY, name="discriminator")
  config = encoder.get_config()
  clone = type(encoder).from_config(config)
  assert clone.get_config() == config
  outputs = clone(tiny_inputs(1, 3))["sequence_output"]
  assert outputs.shape == (1, 3, tiny.TINY.hidden_size)


def test_encoder_config_json_round_trip_and_validation():
  config = encoder_config.EncoderConfig(num_layers=3)
  import json
  assert encoder_config.EncoderConfig.from_dict(
      json.loads(config.to_json())) == config
  with pytest.raises(ValueError, match="unknown"):
    encoder_config.EncoderConfig.from_dict({"hiden_size": 3})
  with pytest.raises(ValueError, match="does not match"):
    encoder_config.build_encoder(
        dataclasses.replace(tiny.TINY, vocab_size=61),
        encoder_config.build_embeddings(tiny.TINY))
