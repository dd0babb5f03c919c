"""Samples ELECTRA's replacement tokens from the generator (Gumbel-max)."""

import numpy as np
import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ReplacedTokenSampler(tf_keras.layers.Layer):
  """Draws one token per masked slot from `softmax(logits / temperature)`.

  The Gumbel-max trick: `argmax(logits / T + G)` with `G = -log(-log(U))`,
  `U ~ Uniform(0, 1)`, is an exact sample of the softmax. Only the generator's
  logits at the masked slots (`[batch, N, vocab]`) are used, never the whole
  sequence, and no one-hot of the samples is built. The samples are integer
  ids taken under `stop_gradient`, so the discriminator's loss cannot flow
  into the generator (Clark et al., 2020, Section 2).

  Args:
    temperature: Softmax temperature; 1.0 in the paper.
  """

  def __init__(self, temperature=1.0, **kwargs):
    super().__init__(**kwargs)
    if temperature <= 0.0:
      raise ValueError(f"temperature must be positive, got {temperature}")
    self.temperature = temperature

  def call(self, logits, seed):
    """Samples token ids.

    Args:
      logits: float `[batch, N, vocab]` generator logits at the masked slots.
      seed: int `[2]` seed of the stateless random op.

    Returns:
      int32 `[batch, N]` sampled token ids.
    """
    # Gumbel noise and the scaled logits stay float32 under mixed precision:
    # bfloat16 would round the noise and bias the samples.
    logits = tf.stop_gradient(tf.cast(logits, tf.float32)) / self.temperature
    uniform = tf.random.stateless_uniform(
        tf.shape(logits), seed=seed, minval=np.finfo(np.float32).tiny,
        maxval=1.0, dtype=tf.float32)
    gumbel_noise = -tf.math.log(-tf.math.log(uniform))
    return tf.argmax(logits + gumbel_noise, axis=-1, output_type=tf.int32)

  def get_config(self):
    config = super().get_config()
    config.update({"temperature": self.temperature})
    return config
