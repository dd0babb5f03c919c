"""The MLM loss's fused cross-entropy equals TensorFlow's, value and gradient."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.models import pretraining_losses


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_masked_lm_loss_and_gradient_equal_tensorflow(scale):
  rng = np.random.default_rng(0)
  logits = tf.constant(rng.normal(scale=scale, size=(3, 5, 97)), tf.float32)
  targets = tf.constant(rng.integers(0, 97, size=(3, 5)), tf.int32)
  weights = tf.constant(rng.integers(0, 2, size=(3, 5)), tf.float32)

  def loss_and_gradient(per_item_fn):
    with tf.GradientTape() as tape:
      tape.watch(logits)
      per_item = per_item_fn()
      loss = pretraining_losses.weighted_mean(per_item, weights)
    return loss, per_item, tape.gradient(loss, logits)

  ours = loss_and_gradient(lambda: pretraining_losses.masked_lm_loss(
      logits, targets, weights)[1])
  expected = loss_and_gradient(
      lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=targets, logits=logits))
  for mine, theirs in zip(ours, expected):
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5,
                               atol=1e-6 * scale)
  assert np.all(np.isfinite(ours[2].numpy()))


def test_inside_tf_function_with_unknown_batch():
  @tf.function(input_signature=[tf.TensorSpec([None, 4, 11], tf.float32),
                                tf.TensorSpec([None, 4], tf.int32)])
  def per_slot(logits, targets):
    return pretraining_losses.masked_lm_loss(logits, targets,
                                             tf.ones(tf.shape(targets)))[1]

  logits = tf.random.stateless_normal([2, 4, 11], seed=[1, 2])
  targets = tf.constant([[0, 10, 3, 4], [5, 6, 7, 8]])
  np.testing.assert_allclose(
      per_slot(logits, targets).numpy(),
      tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=targets, logits=logits).numpy(), rtol=1e-6)
