"""The closed-form, XLA-fused gradients equal TensorFlow's differentiation."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.layers import elementwise_gradients


def reference_layer_norm(inputs, gamma, beta, epsilon):
  mean, variance = tf.nn.moments(inputs, axes=[-1], keepdims=True)
  return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma,
                                   epsilon)


def gradients(function, *args, upstream=None):
  """Value and gradients of `sum(function(*args) * upstream)`."""
  with tf.GradientTape() as tape:
    for arg in args:
      tape.watch(arg)
    value = function(*args)
    objective = tf.reduce_sum(value * upstream)
  return value, tape.gradient(objective, args)


@pytest.mark.parametrize("shape", [(7,), (3, 5, 16), (2, 4, 6, 9)])
def test_gelu_value_and_gradient_equal_autodiff(shape):
  rng = np.random.default_rng(0)
  features = tf.constant(rng.normal(scale=3.0, size=shape), tf.float32)
  upstream = tf.constant(rng.normal(size=shape), tf.float32)
  value, (gradient,) = gradients(elementwise_gradients.exact_gelu, features,
                                 upstream=upstream)
  expected_value, (expected_gradient,) = gradients(
      lambda x: tf.nn.gelu(x, approximate=False), features, upstream=upstream)
  np.testing.assert_array_equal(value.numpy(), expected_value.numpy())
  np.testing.assert_allclose(gradient.numpy(), expected_gradient.numpy(),
                             rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(6, 32), (3, 5, 64)])
@pytest.mark.parametrize("epsilon", [1e-12, 1e-3])
def test_layer_norm_value_and_gradients_equal_autodiff(shape, epsilon):
  rng = np.random.default_rng(1)
  inputs = tf.constant(rng.normal(loc=2.0, scale=4.0, size=shape), tf.float32)
  gamma = tf.constant(rng.normal(size=shape[-1:]), tf.float32)
  beta = tf.constant(rng.normal(size=shape[-1:]), tf.float32)
  upstream = tf.constant(rng.normal(size=shape), tf.float32)
  value, grads = gradients(
      lambda x, g, b: elementwise_gradients.layer_norm(x, g, b, epsilon),
      inputs, gamma, beta, upstream=upstream)
  expected_value, expected_grads = gradients(
      lambda x, g, b: reference_layer_norm(x, g, b, epsilon),
      inputs, gamma, beta, upstream=upstream)
  np.testing.assert_allclose(value.numpy(), expected_value.numpy(),
                             rtol=1e-5, atol=1e-5)
  for gradient, expected in zip(grads, expected_grads):
    assert gradient.shape == expected.shape
    np.testing.assert_allclose(gradient.numpy(), expected.numpy(),
                               rtol=1e-4, atol=1e-4)


def test_gradients_inside_tf_function_with_unknown_shapes():
  @tf.function(input_signature=[tf.TensorSpec([None, None, 16], tf.float32)])
  def grad_of_all(x):
    gamma = tf.ones([16])
    beta = tf.zeros([16])
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = elementwise_gradients.layer_norm(x, gamma, beta, 1e-12)
      y = tf.nn.softmax(elementwise_gradients.exact_gelu(y))
      objective = tf.reduce_sum(y * tf.range(16, dtype=tf.float32))
    return tape.gradient(objective, x)

  def reference(x):
    with tf.GradientTape() as tape:
      tape.watch(x)
      y = reference_layer_norm(x, tf.ones([16]), tf.zeros([16]), 1e-12)
      y = tf.nn.softmax(tf.nn.gelu(y, approximate=False))
      objective = tf.reduce_sum(y * tf.range(16, dtype=tf.float32))
    return tape.gradient(objective, x)

  for shape in [(2, 3, 16), (1, 7, 16)]:
    x = tf.random.stateless_normal(shape, seed=[3, 4])
    np.testing.assert_allclose(grad_of_all(x).numpy(), reference(x).numpy(),
                               rtol=1e-4, atol=1e-5)


def test_bfloat16_gradients_are_close_to_float32():
  x = tf.random.stateless_normal([4, 64], seed=[5, 6])
  upstream = tf.random.stateless_normal([4, 64], seed=[7, 8])
  _, (low,) = gradients(elementwise_gradients.exact_gelu,
                        tf.cast(x, tf.bfloat16),
                        upstream=tf.cast(upstream, tf.bfloat16))
  _, (high,) = gradients(elementwise_gradients.exact_gelu, x,
                         upstream=upstream)
  assert low.dtype == tf.bfloat16
  np.testing.assert_allclose(tf.cast(low, tf.float32).numpy(), high.numpy(),
                             rtol=0.05, atol=0.05)


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_low_precision_gelu_is_the_float32_gelu_rounded_once(dtype):
  # Mixed-precision training computes GELU in float32 in one XLA kernel
  # (the bfloat16 Erfc kernel is several times slower); float32 stays
  # TensorFlow's own op, so exports hold no XLA call.
  x = tf.cast(tf.random.stateless_normal([8, 256], seed=[1, 2]) * 3.0, dtype)
  value = elementwise_gradients.exact_gelu(x)
  assert value.dtype == dtype
  expected = tf.cast(tf.nn.gelu(tf.cast(x, tf.float32), approximate=False),
                     dtype)
  np.testing.assert_array_equal(value.numpy(), expected.numpy())
  traced = tf.function(elementwise_gradients.exact_gelu)
  float32_graph = traced.get_concrete_function(
      tf.TensorSpec([None, 4], tf.float32)).graph
  low_graph = traced.get_concrete_function(
      tf.TensorSpec([None, 4], dtype)).graph

  def calls_xla(graph):
    return any(op.type in ("StatefulPartitionedCall", "PartitionedCall") and
               op.get_attr("_XlaMustCompile") for op in graph.get_operations()
               if "_XlaMustCompile" in op.node_def.attr)
  assert not calls_xla(float32_graph)
  assert calls_xla(low_graph)


def test_bfloat16_gelu_gradient_is_the_float32_gradient_rounded_once():
  # The closed form is computed in float32 and rounded once (XLA would round
  # after every op in bfloat16: half the elements off, by up to 0.016).
  x = tf.cast(tf.random.stateless_normal([8, 256], seed=[1, 2]) * 3.0,
              tf.bfloat16)
  upstream = tf.cast(tf.random.stateless_normal([8, 256], seed=[3, 4]),
                     tf.bfloat16)
  _, (low,) = gradients(elementwise_gradients.exact_gelu, x,
                        upstream=upstream)
  assert low.dtype == tf.bfloat16
  _, (high,) = gradients(lambda v: tf.nn.gelu(v, approximate=False),
                         tf.cast(x, tf.float32),
                         upstream=tf.cast(upstream, tf.float32))
  expected = tf.cast(high, tf.bfloat16).numpy().astype(np.float32)
  actual = low.numpy().astype(np.float32)
  # TensorFlow's float32 gradient and the closed form differ by float32
  # rounding, which can move a value across a bfloat16 rounding boundary.
  differ = actual != expected
  assert differ.mean() < 0.01, differ.sum()
  np.testing.assert_allclose(actual, expected, rtol=2.0**-7, atol=1e-30)
