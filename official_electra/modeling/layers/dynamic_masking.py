"""ELECTRA's dynamic masking: fresh masked positions for every batch, in the graph."""

import tensorflow as tf
import tf_keras


def max_predictions_per_seq(max_seq_length, mask_prob):
  """Number of masked slots per sequence, as the original computes it.

  `int((mask_prob + 0.005) * max_seq_length)`: 19 at 128/0.15, 79 at 512/0.15,
  130 at 512/0.25 (configure_pretraining.py).
  """
  return int((mask_prob + 0.005) * max_seq_length)


@tf_keras.utils.register_keras_serializable(package="official_electra")
class DynamicMasking(tf_keras.layers.Layer):
  """Chooses positions to mask and builds the generator's input.

  Follows the original `pretrain_helpers.mask` (Clark et al., 2020, Section 2):
  each sequence gets `num_to_predict = clamp(round(num_tokens * mask_prob), 1,
  max_predictions_per_seq)` masked slots, where `num_tokens` counts the real
  (non-padding) tokens. Positions are drawn uniformly among the candidates:
  every real token except the excluded special tokens (`[CLS]`, `[SEP]`,
  `[MASK]`, and padding, which is never a real token). Of the chosen
  positions, `1 - keep_original_prob` (85%) become `[MASK]` and the rest keep
  their token; no position gets a random token (that is BERT's 80/10/10, not
  ELECTRA's).

  The original draws positions with replacement and collapses duplicates in
  its scatter; this layer draws them without replacement (the top
  `max_predictions_per_seq` of random keys), so every real slot is a distinct
  position and no duplicate is ever counted twice in the losses. Slots beyond
  `num_to_predict` (or beyond the number of candidates, for very short
  sequences) have weight 0 and position 0.

  Args:
    mask_token_id: Id of `[MASK]` in the vocabulary.
    excluded_token_ids: Ids never chosen for masking (`[CLS]`, `[SEP]`,
      `[MASK]`, `[PAD]` ...), read from the vocabulary by the caller.
    max_predictions_per_seq: Number of slots `N` per sequence.
    mask_prob: Fraction of the real tokens to mask.
    keep_original_prob: Fraction of chosen positions that keep their token.
  """

  def __init__(self,
               mask_token_id,
               excluded_token_ids,
               max_predictions_per_seq,
               mask_prob=0.15,
               keep_original_prob=0.15,
               **kwargs):
    super().__init__(**kwargs)
    if max_predictions_per_seq < 1:
      raise ValueError("max_predictions_per_seq must be positive, got "
                       f"{max_predictions_per_seq}")
    if not 0.0 < mask_prob <= 1.0:
      raise ValueError(f"mask_prob must be in (0, 1], got {mask_prob}")
    if not 0.0 <= keep_original_prob <= 1.0:
      raise ValueError(
          f"keep_original_prob must be in [0, 1], got {keep_original_prob}")
    self.mask_token_id = int(mask_token_id)
    self.excluded_token_ids = sorted(
        {int(token_id) for token_id in excluded_token_ids} |
        {self.mask_token_id})
    self.max_predictions_per_seq = int(max_predictions_per_seq)
    self.mask_prob = mask_prob
    self.keep_original_prob = keep_original_prob

  def call(self, input_word_ids, input_mask, seed):
    """Masks a batch.

    Args:
      input_word_ids: int `[batch, seq_len]` original token ids.
      input_mask: int `[batch, seq_len]`, 1 for real tokens, 0 for padding.
      seed: int `[2]` seed of the stateless random ops (a fresh one per step).

    Returns:
      dict with
        `masked_input_ids`: `[batch, seq_len]`, the generator's input;
        `masked_positions`: int32 `[batch, N]` chosen positions (0 in unused
          slots);
        `masked_ids`: `[batch, N]` original ids at those positions;
        `masked_weights`: float32 `[batch, N]`, 1 for real slots, else 0.
    """
    num_slots = self.max_predictions_per_seq
    input_mask = tf.cast(input_mask, tf.bool)
    batch_size = tf.shape(input_word_ids)[0]
    seq_len = tf.shape(input_word_ids)[1]
    position_seed, keep_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 2))

    excluded = tf.reduce_any(
        tf.equal(input_word_ids[:, :, tf.newaxis],
                 tf.constant(self.excluded_token_ids, input_word_ids.dtype)),
        axis=-1)
    candidates = tf.logical_and(input_mask, tf.logical_not(excluded))
    # Random keys in [0, 1) for candidates, -1 otherwise; the top N keys are a
    # uniformly random subset of the candidates, in random order.
    keys = tf.random.stateless_uniform([batch_size, seq_len], seed=position_seed)
    keys = tf.where(candidates, keys, -1.0)
    keys = tf.pad(keys, [[0, 0], [0, tf.maximum(0, num_slots - seq_len)]],
                  constant_values=-1.0)
    top_keys, positions = tf.math.top_k(keys, k=num_slots, sorted=True)

    num_tokens = tf.reduce_sum(tf.cast(input_mask, tf.float32), axis=-1)
    num_to_predict = tf.clip_by_value(
        tf.cast(tf.round(num_tokens * self.mask_prob), tf.int32), 1, num_slots)
    real_slots = tf.logical_and(
        tf.sequence_mask(num_to_predict, num_slots), top_keys >= 0.0)
    positions = tf.where(real_slots, positions, 0)
    masked_ids = tf.gather(input_word_ids, positions, batch_dims=1)

    replace_with_mask = tf.logical_and(
        real_slots,
        tf.random.stateless_uniform([batch_size, num_slots], seed=keep_seed) >=
        self.keep_original_prob)
    slot_values = tf.where(
        replace_with_mask, tf.cast(self.mask_token_id, input_word_ids.dtype),
        masked_ids)
    masked_input_ids = scatter_into_positions(input_word_ids, positions,
                                              slot_values)
    return {
        "masked_input_ids": masked_input_ids,
        "masked_positions": positions,
        "masked_ids": masked_ids,
        "masked_weights": tf.cast(real_slots, tf.float32),
    }

  def get_config(self):
    config = super().get_config()
    config.update({
        "mask_token_id": self.mask_token_id,
        "excluded_token_ids": self.excluded_token_ids,
        "max_predictions_per_seq": self.max_predictions_per_seq,
        "mask_prob": self.mask_prob,
        "keep_original_prob": self.keep_original_prob,
    })
    return config


def scatter_into_positions(sequence, positions, values):
  """Writes `values` into `sequence` at per-row `positions`.

  Args:
    sequence: `[batch, seq_len]`.
    positions: int32 `[batch, N]`. Unused slots point at position 0 and must
      carry the value already there, so that writing them is a no-op.
    values: `[batch, N]`, same dtype as `sequence`.

  Returns:
    `[batch, seq_len]`, a copy of `sequence` with the values written.
  """
  batch_size = tf.shape(positions)[0]
  num_slots = tf.shape(positions)[1]
  row_ids = tf.tile(tf.range(batch_size)[:, tf.newaxis], [1, num_slots])
  indices = tf.stack([row_ids, positions], axis=-1)
  return tf.tensor_scatter_nd_update(sequence, indices, values)
