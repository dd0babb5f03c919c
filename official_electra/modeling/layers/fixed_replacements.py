"""Replacement tokens drawn without a generator network: the paper's unigram
generator (Section 3.3, Figure 3) and the original code's uniform one.

Each masked slot gets an independent draw; the draws are stateless (seeded),
so a resumed run draws the same replacements.
"""

import numpy as np
import tensorflow as tf

# The log-probability of an id the unigram generator never draws.
_NEVER = -1e30


def unigram_log_probabilities(counts, vocab_size: int,
                              excluded_token_ids) -> tf.Tensor:
  """float32 `[vocab_size]` log-probabilities of the per-id `counts`, with
  the excluded ids (and ids never seen) at a log-probability no draw reaches.

  Raises:
    ValueError: `counts` is not `vocab_size` non-negative numbers, or counts
      nothing outside the excluded ids.
  """
  counts = np.asarray(counts, np.float64)
  if counts.shape != (vocab_size,) or (counts < 0).any():
    raise ValueError(f"unigram_counts must be {vocab_size} non-negative "
                     f"counts, got shape {counts.shape}")
  counts[list(excluded_token_ids)] = 0
  if not counts.sum():
    raise ValueError("unigram_counts has no count outside the excluded ids")
  with np.errstate(divide="ignore"):
    log_probabilities = np.log(counts / counts.sum())
  log_probabilities[counts == 0] = _NEVER
  return tf.constant(log_probabilities, tf.float32)


def sample_unigram(log_probabilities, masked_ids, seed):
  """Replacement ids drawn from `unigram_log_probabilities`, int32
  `[batch, N]` like `masked_ids` (independent draws, one per slot)."""
  shape = tf.shape(masked_ids)
  draws = tf.random.stateless_categorical(
      log_probabilities[tf.newaxis], shape[0] * shape[1], seed=seed,
      dtype=tf.int32)
  return tf.reshape(draws, shape)


def sample_uniformly(masked_ids, seed, vocab_size: int,
                     disallow_correct: bool = False):
  """Uniform replacement ids, int32 `[batch, N]` like `masked_ids` (the
  uniform generator); with `disallow_correct`, uniform over the other
  `vocab_size - 1` ids."""
  if not disallow_correct:
    return tf.random.stateless_uniform(
        tf.shape(masked_ids), seed=seed, maxval=vocab_size, dtype=tf.int32)
  others = tf.random.stateless_uniform(
      tf.shape(masked_ids), seed=seed, maxval=vocab_size - 1, dtype=tf.int32)
  return others + tf.cast(others >= tf.cast(masked_ids, tf.int32), tf.int32)
