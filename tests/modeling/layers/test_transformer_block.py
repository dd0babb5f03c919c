"""The post-LayerNorm Transformer block, checked against a NumPy reference."""

import math

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import transformer_block


def make_block(**overrides):
  args = dict(hidden_size=8, num_attention_heads=2, intermediate_size=16,
              dropout_rate=0.0, attention_dropout_rate=0.0)
  args.update(overrides)
  return transformer_block.TransformerBlock(**args)


def layer_norm(x, layer):
  gamma, beta = (weight.numpy() for weight in layer.weights)
  mean = x.mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * gamma + beta


def dense(x, layer):
  kernel, bias = (weight.numpy() for weight in layer.weights)
  return x @ kernel + bias


def reference_block(block, x, mask):
  """BERT's block written out in NumPy, with separate q, k, v (TF1 layout)."""
  hidden = block.hidden_size
  heads = block.num_attention_heads
  size = hidden // heads
  qkv = dense(x, block.attention_qkv)
  query, key, value = (qkv[..., i * hidden:(i + 1) * hidden] for i in range(3))

  def split(t):
    return t.reshape(t.shape[0], t.shape[1], heads, size).transpose(0, 2, 1, 3)

  scores = split(query) @ split(key).transpose(0, 1, 3, 2) / math.sqrt(size)
  scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
  probs = np.exp(scores - scores.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  context = (probs @ split(value)).transpose(0, 2, 1, 3).reshape(x.shape)
  attention = layer_norm(dense(context, block.attention_output) + x,
                         block.attention_layer_norm)
  inner = dense(attention, block.intermediate)
  erf = np.vectorize(math.erf)
  inner = 0.5 * inner * (1.0 + erf(inner / math.sqrt(2.0)))  # exact GELU
  return layer_norm(dense(inner, block.output_dense) + attention,
                    block.output_layer_norm)


def attention_bias(mask):
  return (1.0 - tf.cast(mask, tf.float32)[:, None, None, :]) * -10000.0


def test_matches_numpy_reference_with_padding():
  block = make_block()
  x = np.random.default_rng(0).normal(size=(2, 5, 8)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)
  outputs = block(tf.constant(x), attention_bias(mask)).numpy()
  np.testing.assert_allclose(outputs, reference_block(block, x, mask),
                             atol=2e-5)


def test_padding_content_does_not_change_real_positions():
  block = make_block()
  x = np.random.default_rng(1).normal(size=(1, 6, 8)).astype(np.float32)
  mask = np.array([[1, 1, 1, 1, 0, 0]], np.float32)
  other = x.copy()
  other[:, 4:] = 100.0
  first = block(tf.constant(x), attention_bias(mask)).numpy()
  second = block(tf.constant(other), attention_bias(mask)).numpy()
  np.testing.assert_allclose(first[:, :4], second[:, :4], atol=1e-5)


def test_variable_length_eager_and_tf_function():
  block = make_block()
  call = tf.function(lambda x, m: block(x, attention_bias(m)))
  for seq_len in (1, 7, 12):
    x = tf.random.normal([3, seq_len, 8])
    mask = tf.ones([3, seq_len])
    np.testing.assert_allclose(call(x, mask), block(x, attention_bias(mask)),
                               atol=1e-5)


def test_mixed_precision_keeps_layer_norm_and_softmax_in_float32():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    block = make_block()
    outputs = block(tf.random.normal([2, 4, 8]), attention_bias(tf.ones([2, 4])))
    assert block.attention_qkv.compute_dtype == "bfloat16"
    assert block.output_layer_norm.compute_dtype == "float32"
    assert outputs.dtype == tf.float32
    assert np.isfinite(outputs.numpy()).all()
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")


def test_config_round_trip_and_validation():
  block = make_block(dropout_rate=0.1)
  clone = transformer_block.TransformerBlock.from_config(block.get_config())
  assert clone.get_config() == block.get_config()
  with pytest.raises(ValueError, match="multiple"):
    make_block(hidden_size=10, num_attention_heads=3)
