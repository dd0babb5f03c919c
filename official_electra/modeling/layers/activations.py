"""Activation functions used by ELECTRA's layers."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="official_electra")
def exact_gelu(x):
  """GELU in its exact erf form, as in the original BERT and ELECTRA code.

  Model Garden's default "gelu" is the tanh approximation; ELECTRA uses
  `0.5 * x * (1 + erf(x / sqrt(2)))`.

  Args:
    x: A float tensor of any shape.

  Returns:
    A tensor of the same shape and dtype.
  """
  return tf.nn.gelu(x, approximate=False)
