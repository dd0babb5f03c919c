"""Dropout whose backward pass is one multiply by the saved mask."""

import tensorflow as tf
import tf_keras


@tf.custom_gradient
def _multiply_by_mask(inputs, mask):
  def gradient(upstream):
    return upstream * mask, None
  return inputs * mask, gradient


@tf_keras.utils.register_keras_serializable(package="official_electra")
class MaskDropout(tf_keras.layers.Dropout):
  """Inverted dropout: `x * mask`, `mask` = `1 / (1 - rate)` or 0 per element.

  The same distribution as `tf_keras.layers.Dropout` (an element is dropped
  when a uniform draw is below `rate`, and the kept ones are scaled by
  `1 / (1 - rate)`), and the same random generator, so
  `official_electra.modeling.checkpoints.dropout_random_state` saves its state.
  Keras' version costs four passes over the tensor forward and three backward
  (scale, select, their gradients); here the mask is built once from the
  uniform draw and the gradient is the upstream gradient times the same mask.
  Dropout in BERT and ELECTRA covers every hidden state and attention
  probability, so this is a measurable share of a training step.

  Args:
    rate: Fraction of the elements dropped, in [0, 1).
    seed: Optional integer seed of the layer's random generator.
    **kwargs: `tf_keras.layers.Layer` arguments.
  """

  def __init__(self, rate, seed=None, **kwargs):
    if not 0.0 <= rate < 1.0:
      raise ValueError(f"rate must be in [0, 1), got {rate}")
    super().__init__(rate, seed=seed, **kwargs)

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
      uniform = self._random_generator.random_uniform(
          tf.shape(inputs), dtype=tf.float32)
      mask = tf.where(uniform >= self.rate,
                      tf.constant(1.0 / (1.0 - self.rate), inputs.dtype),
                      tf.constant(0.0, inputs.dtype))
      return _multiply_by_mask(inputs, mask)

    return tf.__internal__.smart_cond.smart_cond(
        training, dropped, lambda: tf.identity(inputs))

  def get_config(self):
    config = super().get_config()
    config.pop("noise_shape", None)
    return config
