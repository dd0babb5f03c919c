"""Global-norm gradient clipping as one XLA-fused kernel."""

import tensorflow as tf


@tf.function(jit_compile=True)
def _clip(gradients, clip_norm):
  squares = [tf.reduce_sum(tf.square(tf.cast(gradient, tf.float32)))
             for gradient in gradients]
  global_norm = tf.sqrt(tf.add_n(squares))
  scale = clip_norm * tf.minimum(1.0 / global_norm, 1.0 / clip_norm)
  # A non-finite norm gives non-finite gradients, as tf.clip_by_global_norm.
  scale += global_norm - global_norm
  return [gradient * tf.cast(scale, gradient.dtype) for gradient in gradients]


def clip_by_global_norm(gradients, clip_norm):
  """`tf.clip_by_global_norm(gradients, clip_norm)[0]`, in one fused pass.

  TensorFlow's version runs one `L2Loss` and one multiply per tensor; on a
  model of hundreds of variables (and a `[vocab, E]` embedding gradient) the
  separate passes cost several percent of a training step on CPUs.

  Args:
    gradients: a list of dense float tensors.
    clip_norm: the largest global norm kept (1.0 in ELECTRA).

  Returns:
    The gradients, scaled by `clip_norm / max(global_norm, clip_norm)`.
  """
  return _clip(list(gradients), tf.constant(clip_norm, tf.float32))
