"""ELECTRA's dynamic masking: fresh masked positions for every batch, in the graph."""

import tensorflow as tf
import tf_keras


# How `DynamicMasking` draws positions: distinct ones, or the original's
# independent draws (duplicates possible).
DRAWS = ("without_replacement", "with_replacement")


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

  `draws` chooses how positions are drawn:
    `without_replacement` (the default): the top `max_predictions_per_seq` of
      random keys, so every real slot is a distinct position (at length 128
      and 15%, about 14.8% of the tokens are masked).
    `with_replacement`: the original's draws, `num_slots` independent uniform
      draws among the candidates (`tf.random.categorical` in
      `pretrain_helpers.mask`). Duplicates keep their slots (weight 1 each, so
      the losses count them twice, as the original's) and collapse where the
      slots are written: a position is `[MASK]` when any of its slots chose
      `[MASK]` (`scatter_into_positions`, as the original's `scatter_update`).
      Fewer distinct tokens are masked (about 13.8% at length 128 and 15%).
  Slots beyond `num_to_predict` (or, without replacement, beyond the number of
  candidates; with replacement, every slot of a row without candidates) have
  weight 0 and position 0, and write nothing.

  Args:
    mask_token_id: Id of `[MASK]` in the vocabulary.
    excluded_token_ids: Ids never chosen for masking (`[CLS]`, `[SEP]`,
      `[MASK]`, `[PAD]` ...), read from the vocabulary by the caller.
    max_predictions_per_seq: Number of slots `N` per sequence.
    mask_prob: Fraction of the real tokens to mask.
    keep_original_prob: Fraction of chosen positions that keep their token.
    draws: One of `DRAWS`: `without_replacement` or the original's
      `with_replacement`.
  """

  def __init__(self,
               mask_token_id,
               excluded_token_ids,
               max_predictions_per_seq,
               mask_prob=0.15,
               keep_original_prob=0.15,
               draws="without_replacement",
               **kwargs):
    super().__init__(**kwargs)
    if draws not in DRAWS:
      raise ValueError(f"unknown draws {draws!r}; choose one of {DRAWS}")
    check_settings(max_predictions_per_seq, mask_prob, keep_original_prob)
    self.mask_token_id = int(mask_token_id)
    self.excluded_token_ids = sorted(
        {int(token_id) for token_id in excluded_token_ids} |
        {self.mask_token_id})
    self.max_predictions_per_seq = int(max_predictions_per_seq)
    self.mask_prob = mask_prob
    self.keep_original_prob = keep_original_prob
    self.draws = draws

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
    position_seed, keep_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 2))

    candidates = candidate_tokens(input_word_ids, input_mask,
                                  self.excluded_token_ids)
    if self.draws == "without_replacement":
      positions, drawn = _draw_without_replacement(candidates, num_slots,
                                                   position_seed)
    else:
      positions, drawn = _draw_with_replacement(candidates, num_slots,
                                                position_seed)

    real_slots = tf.logical_and(
        tf.sequence_mask(
            tokens_to_mask(input_mask, self.mask_prob, num_slots), num_slots),
        drawn)
    # The original's rule for the same draw: `[MASK]` where `u < 0.85`
    # (pretrain_helpers.py, `mask`), so that fed the same uniforms, the
    # parity reference masks the same slots (official_electra/parity).
    replace_with_mask = tf.logical_and(
        real_slots,
        tf.random.stateless_uniform([batch_size, num_slots], seed=keep_seed) <
        1.0 - self.keep_original_prob)
    return masking_outputs(input_word_ids, positions, real_slots,
                           replace_with_mask, self.mask_token_id)

  def get_config(self):
    config = super().get_config()
    config.update({
        "mask_token_id": self.mask_token_id,
        "excluded_token_ids": self.excluded_token_ids,
        "max_predictions_per_seq": self.max_predictions_per_seq,
        "mask_prob": self.mask_prob,
        "keep_original_prob": self.keep_original_prob,
        "draws": self.draws,
    })
    return config


def check_settings(max_predictions_per_seq, mask_prob, keep_original_prob):
  """Raises ValueError for a setting a masking layer cannot use."""
  if max_predictions_per_seq < 1:
    raise ValueError("max_predictions_per_seq must be positive, got "
                     f"{max_predictions_per_seq}")
  if not 0.0 < mask_prob <= 1.0:
    raise ValueError(f"mask_prob must be in (0, 1], got {mask_prob}")
  if not 0.0 <= keep_original_prob <= 1.0:
    raise ValueError(
        f"keep_original_prob must be in [0, 1], got {keep_original_prob}")


def candidate_tokens(input_word_ids, input_mask, excluded_token_ids):
  """bool `[batch, seq_len]`: the real tokens whose id is not excluded."""
  excluded = tf.reduce_any(
      tf.equal(input_word_ids[:, :, tf.newaxis],
               tf.constant(excluded_token_ids, input_word_ids.dtype)),
      axis=-1)
  return tf.logical_and(tf.cast(input_mask, tf.bool), tf.logical_not(excluded))


def tokens_to_mask(input_mask, mask_prob, num_slots):
  """The budget, int32 `[batch]`: `clamp(round(num_tokens * mask_prob), 1,
  num_slots)`, `num_tokens` counting the real tokens (the original's)."""
  num_tokens = tf.reduce_sum(tf.cast(input_mask, tf.float32), axis=-1)
  return tf.clip_by_value(tf.cast(tf.round(num_tokens * mask_prob), tf.int32),
                          1, num_slots)


def masking_outputs(input_word_ids, positions, real_slots, replace_with_mask,
                    mask_token_id):
  """A masking layer's outputs (see `DynamicMasking.call`) from its slots:
  `positions` (int32 `[batch, N]`), which slots are real and which of those
  become `[MASK]` (bool `[batch, N]`)."""
  positions = tf.where(real_slots, positions, 0)
  masked_input_ids = scatter_into_positions(
      input_word_ids, positions,
      tf.fill(tf.shape(positions),
              tf.cast(mask_token_id, input_word_ids.dtype)),
      tf.logical_and(real_slots, replace_with_mask))
  return {
      "masked_input_ids": masked_input_ids,
      "masked_positions": positions,
      "masked_ids": tf.gather(input_word_ids, positions, batch_dims=1),
      "masked_weights": tf.cast(real_slots, tf.float32),
  }


def _draw_without_replacement(candidates, num_slots, seed):
  """`num_slots` distinct candidate positions per row, in random order.

  Random keys in [0, 1) for candidates, -1 otherwise; the top keys are a
  uniformly random subset of the candidates.

  Returns:
    `(positions, drawn)`: int32 and bool `[batch, num_slots]`; `drawn` is
    False in the slots beyond the row's number of candidates.
  """
  keys = tf.random.stateless_uniform(tf.shape(candidates), seed=seed)
  keys = tf.where(candidates, keys, -1.0)
  seq_len = tf.shape(candidates)[1]
  keys = tf.pad(keys, [[0, 0], [0, tf.maximum(0, num_slots - seq_len)]],
                constant_values=-1.0)
  top_keys, positions = tf.math.top_k(keys, k=num_slots, sorted=True)
  return positions, top_keys >= 0.0


def _draw_with_replacement(candidates, num_slots, seed):
  """`num_slots` independent uniform draws among each row's candidates.

  The original's draws (pretrain_helpers.py, `mask`: `tf.random.categorical`
  on the log of the normalised candidate mask, i.e. uniform over the
  candidates, with replacement). Drawn here as the `floor(u * C)`-th candidate
  of a row with `C` candidates, `u ~ Uniform[0, 1)` (the categorical op has no
  XLA kernel for 64-bit seeds).

  Returns:
    `(positions, drawn)`: int32 and bool `[batch, num_slots]`; `drawn` is
    False in every slot of a row without candidates.
  """
  seq_len = tf.shape(candidates)[1]
  # The candidates' positions first, in increasing order (top_k keeps the
  # lower index first among equal values).
  ordered = tf.math.top_k(tf.cast(candidates, tf.float32), k=seq_len).indices
  num_candidates = tf.reduce_sum(tf.cast(candidates, tf.int32), axis=-1,
                                 keepdims=True)
  uniform = tf.random.stateless_uniform(
      [tf.shape(candidates)[0], num_slots], seed=seed)
  index = tf.cast(tf.floor(uniform * tf.cast(num_candidates, tf.float32)),
                  tf.int32)
  index = tf.clip_by_value(index, 0, tf.maximum(num_candidates - 1, 0))
  positions = tf.gather(ordered, index, batch_dims=1)
  drawn = tf.broadcast_to(num_candidates > 0, tf.shape(positions))
  return positions, drawn


def place_samples(masked_input_ids, input_ids, input_mask, positions,
                  sampled_ids, masked_weights):
  """The corrupted input: `sampled_ids` written at the masked slots.

  Only real slots (`masked_weights` > 0) write; a position drawn twice
  (`with_replacement`) gets the floor of its samples' mean, as the
  original's scatter_update (`scatter_into_positions`).

  Returns:
    dict of `sampled_ids` (cast to the inputs' dtype), `corrupted_ids` and
    `replaced_token_labels` (1 where the corrupted token differs from the
    original, so a sample equal to the original counts as original; 0 on
    padding).
  """
  sampled_ids = tf.cast(sampled_ids, input_ids.dtype)
  corrupted_ids = scatter_into_positions(masked_input_ids, positions,
                                         sampled_ids, masked_weights > 0)
  return {
      "sampled_ids": sampled_ids,
      "corrupted_ids": corrupted_ids,
      "replaced_token_labels": tf.cast(
          tf.not_equal(corrupted_ids, input_ids), tf.int32) * tf.cast(
              input_mask, tf.int32),
  }


def scatter_into_positions(sequence, positions, values, written):
  """Writes `values` into `sequence` at per-row `positions`, where `written`.

  Slots not `written` (unused slots, which point at position 0) change
  nothing, whatever `positions` holds, so a real slot at position 0 is written
  as any other. A position that several written slots share gets the mean of
  their values, rounded down for integer dtypes: the original's
  `pretrain_helpers.scatter_update` ("if there are duplicated positions the
  update is only applied once"; it sums and divides by the count). Positions
  repeat only with `with_replacement` draws.

  Args:
    sequence: `[batch, seq_len]`.
    positions: int32 `[batch, N]`.
    values: `[batch, N]`, same dtype as `sequence`.
    written: bool `[batch, N]`, the slots that write.

  Returns:
    `[batch, seq_len]`, a copy of `sequence` with the values written.
  """
  batch_size = tf.shape(positions)[0]
  num_slots = tf.shape(positions)[1]
  row_ids = tf.tile(tf.range(batch_size)[:, tf.newaxis], [1, num_slots])
  indices = tf.stack([row_ids, positions], axis=-1)
  shape = tf.shape(sequence)
  counts = tf.scatter_nd(indices, tf.cast(written, sequence.dtype), shape)
  sums = tf.scatter_nd(indices, tf.where(written, values,
                                         tf.zeros_like(values)), shape)
  if sequence.dtype.is_integer:
    means = tf.math.floordiv(sums, tf.maximum(counts, 1))
  else:
    means = sums / tf.maximum(counts, 1)
  return tf.where(counts > 0, means, sequence)
