"""The shared embedding block."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import electra_embeddings


def make_layer(**overrides):
  args = dict(vocab_size=50, embedding_size=8, max_position_embeddings=16,
              type_vocab_size=2, dropout_rate=0.1)
  args.update(overrides)
  return electra_embeddings.ElectraEmbeddings(**args)


def test_sum_of_tables_then_layer_norm():
  layer = make_layer(dropout_rate=0.0)
  ids = tf.constant([[1, 2, 3], [4, 5, 0]])
  types = tf.constant([[0, 0, 1], [1, 1, 1]])
  outputs = layer(ids, types).numpy()
  word = layer.word_embeddings.numpy()
  position = layer.position_embeddings.numpy()
  token_type = layer.token_type_embeddings.numpy()
  summed = word[ids.numpy()] + token_type[types.numpy()] + position[None, :3]
  mean = summed.mean(-1, keepdims=True)
  variance = summed.var(-1, keepdims=True)
  expected = (summed - mean) / np.sqrt(variance + 1e-12)
  np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_variable_sequence_length_and_tf_function():
  layer = make_layer()
  call = tf.function(lambda ids: layer(ids, tf.zeros_like(ids)))
  for seq_len in (3, 11, 16):
    assert call(tf.ones([2, seq_len], tf.int32)).shape == (2, seq_len, 8)


def test_dropout_only_in_training():
  layer = make_layer(dropout_rate=0.5)
  ids = tf.ones([2, 5], tf.int32)
  np.testing.assert_array_equal(layer(ids, tf.zeros_like(ids)),
                                layer(ids, tf.zeros_like(ids)))
  assert not np.allclose(layer(ids, tf.zeros_like(ids), training=True),
                         layer(ids, tf.zeros_like(ids)))


def test_layer_norm_stays_float32_under_mixed_precision():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    layer = make_layer()
    outputs = layer(tf.ones([1, 4], tf.int32), tf.zeros([1, 4], tf.int32))
    assert layer.layer_norm.compute_dtype == "float32"
    assert layer.word_embeddings.dtype == tf.float32
    assert outputs.dtype == tf.bfloat16
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


def test_config_round_trip_and_validation():
  layer = make_layer()
  clone = electra_embeddings.ElectraEmbeddings.from_config(layer.get_config())
  assert clone.get_config() == layer.get_config()
  with pytest.raises(ValueError, match="vocab_size"):
    make_layer(vocab_size=0)
