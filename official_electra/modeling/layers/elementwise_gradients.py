"""GELU, LayerNorm and cross-entropy with hand-written, XLA-fused gradients.

TensorFlow differentiates GELU and LayerNorm op by op: the gradient of one
LayerNorm is some twenty elementwise ops and reductions over `[tokens,
hidden]`, each a pass over memory (measured on 2 CPU cores, the fused
gradients below make the twelve-layer ELECTRA-Small discriminator's forward
and backward pass about 10% faster). Here the forward pass is the ordinary
TensorFlow ops (so inference graphs and SavedModels hold only stock ops) and
the gradient is the closed form, compiled by XLA into one fused kernel per
function (`tf.function(jit_compile=True)`; under a step that is itself
XLA-compiled it is inlined). The values are the same functions; only the
order of floating-point operations in the gradient differs. The MLM
cross-entropy is here too: its forward pass is a loss, never exported, so
both directions are XLA kernels. (Softmax is not here: TensorFlow's own
gradient of it measured faster than an XLA kernel.)
"""

import math

import tensorflow as tf

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@tf.function(jit_compile=True)
def _gelu_gradient(upstream, features):
  """`upstream * GELU'(features)`, computed in float32, in the inputs' dtype.

  In bfloat16 XLA would round after every op of the closed form (and its
  bfloat16 kernel measured 1.9x slower than float32's on [4096, 1024]); here
  it is computed once in float32 and rounded once. For float32 the casts are
  no-ops.
  """
  x = tf.cast(features, tf.float32)
  cdf = 0.5 * tf.math.erfc(x * -_INV_SQRT_2)
  pdf = _INV_SQRT_2PI * tf.exp(-0.5 * tf.square(x))
  return tf.cast(tf.cast(upstream, tf.float32) * (cdf + x * pdf),
                 upstream.dtype)


@tf.function(jit_compile=True)
def _gelu_in_float32(features):
  return tf.cast(tf.nn.gelu(tf.cast(features, tf.float32), approximate=False),
                 features.dtype)


@tf.custom_gradient
def exact_gelu(features):
  """`0.5 * x * (1 + erf(x / sqrt(2)))`, as BERT and ELECTRA (not tanh).

  In float32 (and so in every export) the forward pass is TensorFlow's own
  `tf.nn.gelu`. In bfloat16 and float16 (mixed-precision training) it is
  computed in float32 and rounded once, in one XLA kernel: TensorFlow's
  bfloat16 `Erfc` kernel made GELU 4-5x slower than this on a CPU with
  native bfloat16 ([4096, 1024], 2 cores), and the result is the exact GELU
  rounded to the dtype (closer to it than the bfloat16 kernel's).

  Args:
    features: float tensor of any shape and dtype.

  Returns:
    A tensor of the same shape and dtype.
  """
  def gradient(upstream):
    return _gelu_gradient(upstream, features)
  if features.dtype in (tf.bfloat16, tf.float16):
    return _gelu_in_float32(features), gradient
  return tf.nn.gelu(features, approximate=False), gradient


@tf.function(jit_compile=True)
def _layer_norm_gradient(upstream, normalized, inverse_std, gamma):
  scaled = upstream * gamma
  inputs_gradient = inverse_std * (
      scaled - tf.reduce_mean(scaled, axis=-1, keepdims=True) -
      normalized * tf.reduce_mean(scaled * normalized, axis=-1, keepdims=True))
  reduce_axes = tf.range(tf.rank(upstream) - 1)
  return (inputs_gradient,
          tf.reduce_sum(upstream * normalized, axis=reduce_axes),
          tf.reduce_sum(upstream, axis=reduce_axes))


def layer_norm(inputs, gamma, beta, epsilon):
  """LayerNorm over the last axis.

  `(x - mean) / sqrt(var + epsilon) * gamma + beta`.

  Args:
    inputs: float `[..., width]`.
    gamma: float `[width]` scale.
    beta: float `[width]` offset.
    epsilon: added to the variance (1e-12 in BERT and ELECTRA).

  Returns:
    A tensor shaped and typed as `inputs`.
  """

  @tf.custom_gradient
  def normalize(inputs, gamma, beta):
    mean, variance = tf.nn.moments(inputs, axes=[-1], keepdims=True)
    inverse_std = tf.math.rsqrt(variance + epsilon)
    normalized = (inputs - mean) * inverse_std

    def gradient(upstream):
      return _layer_norm_gradient(upstream, normalized, inverse_std, gamma)
    return normalized * gamma + beta, gradient

  # Read (possibly distributed) variables here, outside the custom gradient,
  # so the gradient reaches them through the reads.
  return normalize(inputs, tf.convert_to_tensor(gamma),
                   tf.convert_to_tensor(beta))


@tf.function(jit_compile=True)
def _cross_entropy_and_log_normalizer(logits, labels):
  largest = tf.reduce_max(logits, axis=-1, keepdims=True)
  log_normalizer = largest + tf.math.log(
      tf.reduce_sum(tf.exp(logits - largest), axis=-1, keepdims=True))
  label_logits = tf.gather(logits, labels[..., tf.newaxis],
                           batch_dims=labels.shape.rank)
  return (log_normalizer - label_logits)[..., 0], log_normalizer


@tf.function(jit_compile=True)
def _cross_entropy_gradient(upstream, logits, log_normalizer, labels):
  one_hot = tf.one_hot(labels, tf.shape(logits)[-1], dtype=logits.dtype)
  probabilities = tf.exp(logits - log_normalizer)
  return (probabilities - one_hot) * upstream[..., tf.newaxis]


@tf.custom_gradient
def sparse_softmax_cross_entropy(logits, labels):
  """`tf.nn.sparse_softmax_cross_entropy_with_logits`, two fused XLA kernels.

  TensorFlow's kernel is about 1.7x slower on `[batch, slots, 30522]` float32
  logits on CPU; this one reads the logits once forward and once backward.
  Labels must lie in `[0, vocab)` (XLA's gather does not check them).

  Args:
    logits: float32 `[..., vocab]`.
    labels: int32 `[...]`.

  Returns:
    float32 `[...]` per-item cross-entropy.
  """
  per_item, log_normalizer = _cross_entropy_and_log_normalizer(logits, labels)

  def gradient(upstream):
    return (_cross_entropy_gradient(upstream, logits, log_normalizer, labels),
            None)
  return per_item, gradient
