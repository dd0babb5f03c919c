"""Activation functions used by ELECTRA's layers."""

import tf_keras

from official_electra.modeling.layers import elementwise_gradients


@tf_keras.utils.register_keras_serializable(package="official_electra")
def exact_gelu(x):
  """GELU in its exact erf form, as in the original BERT and ELECTRA code.

  Model Garden's default "gelu" is the tanh approximation; ELECTRA uses
  `0.5 * x * (1 + erf(x / sqrt(2)))`. Its gradient is one fused kernel
  (`elementwise_gradients.exact_gelu`).

  Args:
    x: A float tensor of any shape.

  Returns:
    A tensor of the same shape and dtype.
  """
  return elementwise_gradients.exact_gelu(x)
