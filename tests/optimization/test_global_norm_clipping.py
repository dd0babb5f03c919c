"""The fused global-norm clipping equals tf.clip_by_global_norm."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.optimization import global_norm_clipping


def random_gradients(scale):
  rng = np.random.default_rng(0)
  shapes = [(30, 8), (8,), (1,), (4, 5, 6)]
  return [tf.constant(rng.normal(scale=scale, size=shape), tf.float32)
          for shape in shapes]


@pytest.mark.parametrize("scale", [0.01, 1.0, 100.0])
def test_equals_tensorflow_below_and_above_the_clip_norm(scale):
  gradients = random_gradients(scale)
  expected, _ = tf.clip_by_global_norm(gradients, 1.0)
  clipped = global_norm_clipping.clip_by_global_norm(gradients, 1.0)
  for ours, theirs in zip(clipped, expected):
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)
  norm = np.sqrt(sum(np.sum(g.numpy().astype(np.float64) ** 2)
                     for g in clipped))
  unclipped_norm = float(tf.linalg.global_norm(gradients))
  assert norm == pytest.approx(min(1.0, unclipped_norm), rel=1e-5)


def test_non_finite_norm_gives_non_finite_gradients():
  gradients = random_gradients(1.0)
  gradients[1] = tf.constant([np.inf] * 8, tf.float32)
  clipped = global_norm_clipping.clip_by_global_norm(gradients, 1.0)
  assert all(np.all(np.isnan(g.numpy())) for g in clipped)


def test_inside_tf_function_and_bfloat16_gradients_keep_their_dtype():
  clip = tf.function(global_norm_clipping.clip_by_global_norm)
  clipped = clip([tf.fill([3], tf.constant(2.0, tf.bfloat16)),
                  tf.constant([0.0, 3.0])], 0.5)
  assert [g.dtype for g in clipped] == [tf.bfloat16, tf.float32]
  np.testing.assert_allclose(clipped[1].numpy(), [0.0, 3.0 * 0.5 / np.sqrt(21)],
                             rtol=1e-6)
