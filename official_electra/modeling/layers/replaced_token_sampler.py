"""Samples ELECTRA's replacement tokens from the generator (Gumbel-max)."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import philox_random

# What the original subtracts from the original token's logit with
# `disallow_correct` (pretrain_helpers.py, `sample_from_softmax`).
DISALLOWED_LOGIT_OFFSET = 1000.0


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ReplacedTokenSampler(tf_keras.layers.Layer):
  """Draws one token per masked slot from `softmax(logits / temperature)`.

  The Gumbel-max trick: `argmax(logits / T + G)` with `G = -log(-log(U))`,
  `U ~ Uniform(0, 1)`, is an exact sample of the softmax. Only the generator's
  logits at the masked slots (`[batch, N, vocab]`) are used, never the whole
  sequence, and no one-hot of the samples is built. The samples are integer
  ids taken under `stop_gradient`, so the discriminator's loss cannot flow
  into the generator (Clark et al., 2020, Section 2).

  With `disallow_correct`, the original token's logit is lowered by
  `DISALLOWED_LOGIT_OFFSET` (1000) after the temperature, as the original's
  `disallow_correct` option (pretrain_helpers.py, `sample_from_softmax`, called
  from run_pretraining.py `_get_fake_data`): the Gumbel noise here lies in
  [-4.5, 16.7), so the original is drawn only if its tempered logit leads
  every other token's by more than 979.

  Args:
    temperature: Softmax temperature; 1.0 in the paper.
    disallow_correct: Never sample the original token (off in the paper and
      by default in the original's configure_pretraining.py).
  """

  def __init__(self, temperature=1.0, disallow_correct=False, **kwargs):
    super().__init__(**kwargs)
    if temperature <= 0.0:
      raise ValueError(f"temperature must be positive, got {temperature}")
    self.temperature = temperature
    self.disallow_correct = bool(disallow_correct)

  def call(self, logits, seed, original_ids=None):
    """Samples token ids.

    Args:
      logits: float `[batch, N, vocab]` generator logits at the masked slots.
      seed: int `[2]` seed of the stateless random op.
      original_ids: int `[batch, N]` original tokens at the slots; needed with
        `disallow_correct`, ignored without.

    Returns:
      int32 `[batch, N]` sampled token ids.
    """
    # Gumbel noise and the scaled logits stay float32 under mixed precision:
    # bfloat16 would round the noise and bias the samples.
    logits = tf.stop_gradient(tf.cast(logits, tf.float32))
    if self.temperature != 1.0:  # (Dividing by 1 would be a pass for nothing.)
      logits /= self.temperature
    if self.disallow_correct:
      if original_ids is None:
        raise ValueError("disallow_correct needs the original_ids")
      logits -= DISALLOWED_LOGIT_OFFSET * tf.one_hot(
          original_ids, depth=tf.shape(logits)[-1], dtype=tf.float32)
    # tf.random.stateless_uniform's draws, computed faster.
    uniform = philox_random.uniform_open_unit(tf.shape(logits), seed)
    gumbel_noise = -tf.math.log(-tf.math.log(uniform))
    return tf.argmax(logits + gumbel_noise, axis=-1, output_type=tf.int32)

  def get_config(self):
    config = super().get_config()
    config.update({"temperature": self.temperature,
                   "disallow_correct": self.disallow_correct})
    return config
