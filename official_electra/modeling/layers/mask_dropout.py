"""Dropout that applies its mask in one XLA loop each way, never writing it."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import philox_random


@tf.function(jit_compile=True)
def _times_mask(values, draws, threshold, scale):
  # `values * mask`, mask = `scale` where the draw is kept, else 0: one XLA
  # loop that never writes the mask (the same values as materialising it and
  # multiplying, signed zeros and NaNs included). In bfloat16 TensorFlow's
  # SelectV2 that built the mask was 4x its float32 time; this kernel
  # measured 2-5x faster than select + multiply in both precisions.
  keep = draws >= threshold
  return values * tf.where(keep, scale, tf.zeros_like(scale))


@tf.custom_gradient
def _multiply_by_mask(inputs, draws, threshold, scale):
  def gradient(upstream):
    return _times_mask(upstream, draws, threshold, scale), None, None, None
  return _times_mask(inputs, draws, threshold, scale), gradient


# Drop decisions compare 16 random bits with a threshold: two decisions per
# 32-bit Philox draw, which halves the random-number cost of dropout.
_LEVELS = 1 << 16


@tf_keras.utils.register_keras_serializable(package="official_electra")
class MaskDropout(tf_keras.layers.Dropout):
  """Inverted dropout: `x * mask`, `mask` = `1 / keep_prob` or 0 per element.

  An element is dropped when 16 random bits, read as an integer `u` in
  `[0, 65536)`, fall below `round(rate * 65536)`: the drop probability is
  `rate` rounded to a multiple of 1/65536 (0.1 becomes 0.1000061), and the kept
  elements are scaled by the inverse of the exact keep probability, so the
  expected output equals the input. (Keras and the original TF1 code compare a
  float32 uniform draw with `rate`: one 32-bit draw per element; dropout covers
  every hidden state and attention probability of BERT and ELECTRA, and
  drawing those numbers is a measurable share of a training step on CPUs.)

  The mask is never written: one XLA loop multiplies by it forward and one
  multiplies the upstream gradient by the same mask backward, from the saved
  16-bit draws (Keras' dropout costs four passes over the tensor forward and
  three backward). Seeds come from the layer's Keras random generator, so
  `official_electra.modeling.checkpoints.dropout_random_state` saves its state.

  Args:
    rate: Fraction of the elements dropped, in [0, 1).
    seed: Optional integer seed of the layer's random generator.
    **kwargs: `tf_keras.layers.Layer` arguments.
  """

  def __init__(self, rate, seed=None, **kwargs):
    if not 0.0 <= rate < 1.0:
      raise ValueError(f"rate must be in [0, 1), got {rate}")
    super().__init__(rate, seed=seed, **kwargs)
    self._threshold = min(_LEVELS - 1, max(1, round(rate * _LEVELS)))

  @property
  def drop_probability(self):
    """The exact probability that an element is dropped (`rate`, rounded)."""
    return self._threshold / _LEVELS if self.rate > 0.0 else 0.0

  def call(self, inputs, training=None):
    """Drops elements when training.

    Args:
      inputs: float tensor of any shape.
      training: Whether to drop; the Keras learning phase when None.

    Returns:
      A tensor shaped and typed as `inputs`.
    """
    if self.rate == 0.0:
      return tf.identity(inputs)
    if training is None:
      training = tf_keras.backend.learning_phase()

    def dropped():
      size = tf.size(inputs)
      # tf.random.stateless_uniform's uint32 stream, drawn faster.
      bits = philox_random.uniform_uint32((size + 1) // 2,
                                          self._stateless_seed())
      draws = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:size]
      scale = _LEVELS / (_LEVELS - self._threshold)
      return _multiply_by_mask(inputs, tf.reshape(draws, tf.shape(inputs)),
                               tf.constant(self._threshold, tf.uint16),
                               tf.constant(scale, inputs.dtype))

    return tf.__internal__.smart_cond.smart_cond(
        training, dropped, lambda: tf.identity(inputs))

  def _stateless_seed(self):
    """A fresh int `[2]` seed from the layer's Keras random generator."""
    seed = self._random_generator.make_seed_for_stateless_op()
    if seed is None:
      # Keras' legacy stateful ops (no `enable_tf_random_generator()`).
      seed = tf.random.uniform([2], maxval=tf.int32.max, dtype=tf.int32,
                               seed=self._random_generator.make_legacy_seed())
    return seed

  def get_config(self):
    config = super().get_config()
    config.pop("noise_shape", None)
    return config
