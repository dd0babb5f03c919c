"""Our LayerNormalization equals tf_keras' in values, gradients, variables."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import layer_normalization


def random_initializer(seed):
  return tf_keras.initializers.RandomNormal(mean=1.0, stddev=0.5, seed=seed)


@pytest.mark.parametrize("shape", [(5, 32), (2, 7, 32)])
def test_values_and_gradients_equal_keras(shape):
  ours = layer_normalization.LayerNormalization(
      epsilon=1e-12, gamma_initializer=random_initializer(0),
      beta_initializer=random_initializer(1))
  keras = tf_keras.layers.LayerNormalization(
      epsilon=1e-12, gamma_initializer=random_initializer(0),
      beta_initializer=random_initializer(1))
  inputs = tf.random.stateless_normal(shape, seed=[2, 3]) * 4.0 + 1.0
  upstream = tf.random.stateless_normal(shape, seed=[4, 5])
  results = []
  for layer in (ours, keras):
    with tf.GradientTape() as tape:
      tape.watch(inputs)
      objective = tf.reduce_sum(layer(inputs) * upstream)
    results.append((layer(inputs),) + tuple(
        tape.gradient(objective, [inputs, layer.gamma, layer.beta])))
  for ours_tensor, keras_tensor in zip(*results):
    np.testing.assert_allclose(ours_tensor.numpy(), keras_tensor.numpy(),
                               rtol=1e-4, atol=1e-4)
  assert [w.name.split("/")[-1] for w in ours.weights] == ["gamma:0", "beta:0"]


def test_float32_layer_under_mixed_precision():
  layer = layer_normalization.LayerNormalization(dtype=tf.float32)
  inputs = tf.ones([2, 3, 8], tf.bfloat16) * tf.range(8.0, dtype=tf.bfloat16)
  outputs = layer(inputs)
  assert outputs.dtype == tf.float32


def test_config_round_trip():
  layer = layer_normalization.LayerNormalization(epsilon=1e-6, name="ln")
  layer.build((None, 4))
  clone = tf_keras.layers.deserialize(tf_keras.layers.serialize(layer))
  assert isinstance(clone, layer_normalization.LayerNormalization)
  assert (clone.epsilon, clone.name) == (1e-6, "ln")
