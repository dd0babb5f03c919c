"""ELECTRA's replaced-token-detection head."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import activations


@tf_keras.utils.register_keras_serializable(package="official_electra")
class DiscriminatorHead(tf_keras.layers.Layer):
  """dense(H -> H) + GELU, then dense(H -> 1): one logit per token.

  As the original `discriminator_predictions` (Clark et al., 2020, Section 2):
  the first dense uses the truncated-normal initializer, the second the
  Glorot-uniform default of the original. A positive logit means "replaced".

  Args:
    hidden_size: Width `H` of the discriminator.
    initializer_range: Standard deviation of the first dense's initializer.
  """

  def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range
    self.dense = tf_keras.layers.Dense(
        hidden_size, activation=activations.exact_gelu,
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        name="dense")
    self.dense_prediction = tf_keras.layers.Dense(
        1, kernel_initializer="glorot_uniform", name="dense_1")

  def build(self, input_shape):
    with tf.name_scope(self.dense.name):
      self.dense.build(input_shape)
    with tf.name_scope(self.dense_prediction.name):
      self.dense_prediction.build((None, None, self.hidden_size))
    super().build(input_shape)

  def call(self, sequence_output):
    """Scores every token.

    Args:
      sequence_output: `[batch, seq_len, hidden]` discriminator output.

    Returns:
      float32 `[batch, seq_len]` logits of "this token was replaced".
    """
    logits = self.dense_prediction(self.dense(sequence_output))
    # The sigmoid loss is computed in float32.
    return tf.cast(tf.squeeze(logits, axis=-1), tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update({"hidden_size": self.hidden_size,
                   "initializer_range": self.initializer_range})
    return config
