"""Span masking: whole-word spans of geometric length, in the graph.

SpanBERT's masking scheme (Joshi et al., 2020, Section 3.1) as an option of
every pretraining objective: instead of single tokens, masking chooses spans
of whole words whose lengths (in words) follow a geometric distribution
clipped at `max_span_words`, until the masking budget is met. With
`max_span_words=1` it masks whole words (every span is one word).
"""

import numpy as np
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import dynamic_masking

# The masking schemes of pretraining: single tokens (`DynamicMasking`, the
# paper's), spans of whole words, whole words.
SCHEMES = ("tokens", "spans", "whole_words")


def takes_draws(masking_scheme, masking_draws):
  """Whether `masking_draws` goes with `masking_scheme`: only single tokens
  are drawn with replacement (the original's); spans and whole words are
  drawn without (`dynamic_masking.DRAWS`)."""
  return masking_scheme == "tokens" or masking_draws == "without_replacement"

# SpanBERT's span lengths: Geo(p = 0.2) clipped at 10 words (mean 3.8).
SPAN_P = 0.2
MAX_SPAN_WORDS = 10


def span_length_probabilities(span_p, max_span_words):
  """P(length = l) for l = 1..max_span_words: p (1 - p)^(l - 1), renormalised
  over the clipped range (the distribution `SpanMasking` draws from)."""
  lengths = np.arange(1, max_span_words + 1)
  weights = span_p * (1.0 - span_p)**(lengths - 1)
  return weights / weights.sum()


def mean_span_length(span_p=SPAN_P, max_span_words=MAX_SPAN_WORDS):
  """The mean of the clipped geometric distribution, in words (3.797 for
  p = 0.2 clipped at 10)."""
  probabilities = span_length_probabilities(span_p, max_span_words)
  return float((np.arange(1, max_span_words + 1) * probabilities).sum())


def sample_span_lengths(span_p, max_span_words, shape, seed):
  """Span lengths in words, int32 of `shape`, drawn from
  `span_length_probabilities` by inverting its CDF at uniform draws."""
  bounds = tf.constant(
      np.cumsum(span_length_probabilities(span_p, max_span_words))[:-1],
      tf.float32)
  uniform = tf.random.stateless_uniform(shape, seed=seed)
  return 1 + tf.reduce_sum(
      tf.cast(uniform[..., tf.newaxis] >= bounds, tf.int32), axis=-1)


def continuation_token_ids(tokens):
  """Ids of WordPiece continuation pieces (`##...`): the tokens that extend
  the word before them."""
  return [index for index, token in enumerate(tokens)
          if token.startswith("##") and len(token) > 2]


@tf_keras.utils.register_keras_serializable(package="official_electra")
def masking_layer(masking_scheme, *, mask_token_id, excluded_token_ids,
                  continuation_token_ids, vocab_size, max_predictions_per_seq,
                  mask_prob, masking_draws):
  """The masking layer of a scheme in `SCHEMES`: `tokens` is the paper's
  `DynamicMasking` (its `draws` are `masking_draws`), `spans` and
  `whole_words` are `SpanMasking` with spans of up to `MAX_SPAN_WORDS` words
  or of one word, with the same budget and special-token rules."""
  if masking_scheme == "tokens":
    return dynamic_masking.DynamicMasking(
        mask_token_id=mask_token_id, excluded_token_ids=excluded_token_ids,
        max_predictions_per_seq=max_predictions_per_seq, mask_prob=mask_prob,
        draws=masking_draws)
  return SpanMasking(
      mask_token_id=mask_token_id, excluded_token_ids=excluded_token_ids,
      continuation_token_ids=continuation_token_ids, vocab_size=vocab_size,
      max_predictions_per_seq=max_predictions_per_seq, mask_prob=mask_prob,
      max_span_words=MAX_SPAN_WORDS if masking_scheme == "spans" else 1)


class SpanMasking(tf_keras.layers.Layer):
  """Chooses whole-word spans to mask and builds the generator's input.

  The same contract as `DynamicMasking` (its outputs, slot count, candidates
  and budget), with positions chosen in spans:
  - A word is a candidate token (a real token that is not `[CLS]`, `[SEP]`,
    `[MASK]` or padding) followed by the continuation pieces (`##...`) after
    it. A continuation piece right after a special token starts a word.
  - The budget of a sequence is `DynamicMasking`'s: `num_to_predict =
    clamp(round(num_tokens * mask_prob), 1, max_predictions_per_seq)` tokens,
    `num_tokens` counting the real tokens.
  - Spans are tried one after another, at most `max_span_words_tried` (or
    the number of words, if fewer): each starts at a word not tried before
    (uniformly among the sequence's words) and has a length of `l` words,
    `l` drawn from `span_length_probabilities` (Geo(`span_p`) clipped at
    `max_span_words`). A span ends early at the end of its segment (a span
    never crosses a special token or padding), and drops its last words when
    the whole span would exceed what is left of the budget. A span that
    then overlaps a masked word, or has no word left, is skipped. Masking
    stops when no span is left to try; a sequence ends at most at its
    budget, usually exactly at it.
  - Of each span, with probability `1 - keep_original_prob` every token
    becomes `[MASK]`, else every token keeps its value (SpanBERT decides per
    span too); no token gets a random token, as in `DynamicMasking`.

  Args:
    mask_token_id: Id of `[MASK]`.
    excluded_token_ids: Ids never masked and that end spans (`[CLS]`,
      `[SEP]`, `[MASK]`, `[PAD]`...).
    continuation_token_ids: Ids of the continuation pieces (`##...`) of the
      vocabulary (`continuation_token_ids(tokens)`).
    vocab_size: Number of ids in the vocabulary.
    max_predictions_per_seq: Number of slots `N` per sequence.
    mask_prob: Fraction of the real tokens to mask.
    keep_original_prob: Fraction of spans whose tokens keep their value.
    span_p: The geometric distribution's parameter (0.2).
    max_span_words: The longest span, in words (10; 1 masks whole words).
    max_span_words_tried: Spans tried per sequence (default `2 N`: a tried
      span masks at least one token unless it is skipped, and starts are
      distinct words, so skips are rare).
  """

  def __init__(self,
               mask_token_id,
               excluded_token_ids,
               continuation_token_ids,
               vocab_size,
               max_predictions_per_seq,
               mask_prob=0.15,
               keep_original_prob=0.15,
               span_p=SPAN_P,
               max_span_words=MAX_SPAN_WORDS,
               max_span_words_tried=None,
               **kwargs):
    super().__init__(**kwargs)
    dynamic_masking.check_settings(max_predictions_per_seq, mask_prob,
                                   keep_original_prob)
    if not 0.0 < span_p <= 1.0:
      raise ValueError(f"span_p must be in (0, 1], got {span_p}")
    if int(max_span_words) < 1:
      raise ValueError(f"max_span_words must be positive, got {max_span_words}")
    continuation = sorted({int(token_id) for token_id in
                           continuation_token_ids})
    if continuation and not 0 <= continuation[0] <= continuation[-1] < int(
        vocab_size):
      raise ValueError("continuation_token_ids must be ids of a vocabulary of "
                       f"{vocab_size} tokens")
    self.mask_token_id = int(mask_token_id)
    self.excluded_token_ids = sorted(
        {int(token_id) for token_id in excluded_token_ids} |
        {self.mask_token_id})
    self.continuation_token_ids = continuation
    self.vocab_size = int(vocab_size)
    self.max_predictions_per_seq = int(max_predictions_per_seq)
    self.mask_prob = mask_prob
    self.keep_original_prob = keep_original_prob
    self.span_p = span_p
    self.max_span_words = int(max_span_words)
    self.max_span_words_tried = int(max_span_words_tried or
                                    2 * max_predictions_per_seq)
    is_continuation = np.zeros(self.vocab_size, bool)
    is_continuation[continuation] = True
    self._is_continuation = tf.constant(is_continuation)

  def draw_spans(self, input_word_ids, input_mask, seed):
    """The spans of a batch, one id per token.

    Args:
      input_word_ids: int `[batch, seq_len]` token ids.
      input_mask: int `[batch, seq_len]`, 1 for real tokens.
      seed: int `[2]` seed of the stateless random ops.

    Returns:
      int32 `[batch, seq_len]`: for each masked token the number of its span
      among the spans tried (0-based), -1 for tokens not masked.
    """
    input_word_ids = tf.convert_to_tensor(input_word_ids)
    batch_size = tf.shape(input_word_ids)[0]
    seq_len = tf.shape(input_word_ids)[1]
    num_tries = self.max_span_words_tried
    start_seed, length_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 2))
    words = _Words(input_word_ids, tf.cast(input_mask, tf.bool),
                   self.excluded_token_ids, self._is_continuation)
    budget = dynamic_masking.tokens_to_mask(input_mask, self.mask_prob,
                                            self.max_predictions_per_seq)

    # Start words: the first `num_tries` of a random order of the words.
    keys = tf.random.stateless_uniform([batch_size, seq_len], seed=start_seed)
    keys = tf.where(tf.range(seq_len)[tf.newaxis] < words.count[:, tf.newaxis],
                    keys, -1.0)
    keys = tf.pad(keys, [[0, 0], [0, tf.maximum(0, num_tries - seq_len)]],
                  constant_values=-1.0)
    start_keys, starts = tf.math.top_k(keys, k=num_tries)
    tried = start_keys >= 0.0
    lengths = sample_span_lengths(self.span_p, self.max_span_words,
                                  [batch_size, num_tries], length_seed)

    word_range = tf.range(seq_len)[tf.newaxis]

    def try_span(index, word_span, used):
      start = tf.minimum(tf.gather(starts, index, axis=1), seq_len - 1)
      start = start[:, tf.newaxis]
      end = tf.minimum(
          start + tf.gather(lengths, index, axis=1)[:, tf.newaxis],
          tf.gather(words.segment_end, start, batch_dims=1))
      in_span = tf.logical_and(word_range >= start, word_range < end)
      # Tokens from the span's first word to the end of each word.
      through = (words.tokens_before + words.tokens -
                 tf.gather(words.tokens_before, start, batch_dims=1))
      span = tf.logical_and(in_span, through <= (budget - used)[:, tf.newaxis])
      taken = tf.logical_and(
          tf.gather(tried, index, axis=1),
          tf.logical_and(
              tf.reduce_any(span, axis=-1),
              tf.logical_not(tf.reduce_any(
                  tf.logical_and(span, word_span >= 0), axis=-1))))
      span = tf.logical_and(span, taken[:, tf.newaxis])
      return (index + 1, tf.where(span, index, word_span),
              used + tf.reduce_sum(tf.where(span, words.tokens, 0), axis=-1))

    # Stops early once every row is full (a full row takes no more spans):
    # the same spans, fewer steps.
    reachable = tf.minimum(
        budget, tf.reduce_sum(tf.cast(words.candidates, tf.int32), axis=-1))

    def more_to_mask(index, word_span, used):
      del word_span
      return tf.logical_and(index < num_tries,
                            tf.reduce_any(used < reachable))

    _, word_span, _ = tf.while_loop(
        more_to_mask, try_span,
        (tf.constant(0), tf.fill([batch_size, seq_len], -1),
         tf.zeros([batch_size], tf.int32)))
    token_span = tf.gather(word_span, tf.maximum(words.index, 0),
                           batch_dims=1)
    return tf.where(words.candidates, token_span, -1)

  def call(self, input_word_ids, input_mask, seed):
    """Masks a batch; the inputs and outputs of `DynamicMasking.call`."""
    num_slots = self.max_predictions_per_seq
    span_seed, keep_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 2))
    token_span = self.draw_spans(input_word_ids, input_mask, span_seed)
    masked = token_span >= 0
    batch_size = tf.shape(input_word_ids)[0]
    seq_len = tf.shape(input_word_ids)[1]
    # Slots hold the masked positions in increasing order.
    keys = tf.where(masked, seq_len - tf.range(seq_len)[tf.newaxis], -1)
    keys = tf.pad(keys, [[0, 0], [0, tf.maximum(0, num_slots - seq_len)]],
                  constant_values=-1)
    slot_keys, positions = tf.math.top_k(keys, k=num_slots)
    real_slots = slot_keys >= 0
    kept_spans = tf.random.stateless_uniform(
        [batch_size, self.max_span_words_tried],
        seed=keep_seed) < self.keep_original_prob
    slot_span = tf.gather(token_span, positions, batch_dims=1)
    replace_with_mask = tf.logical_not(
        tf.gather(kept_spans, tf.maximum(slot_span, 0), batch_dims=1))
    return dynamic_masking.masking_outputs(input_word_ids, positions,
                                           real_slots, replace_with_mask,
                                           self.mask_token_id)

  def get_config(self):
    config = super().get_config()
    config.update({
        "mask_token_id": self.mask_token_id,
        "excluded_token_ids": self.excluded_token_ids,
        "continuation_token_ids": self.continuation_token_ids,
        "vocab_size": self.vocab_size,
        "max_predictions_per_seq": self.max_predictions_per_seq,
        "mask_prob": self.mask_prob,
        "keep_original_prob": self.keep_original_prob,
        "span_p": self.span_p,
        "max_span_words": self.max_span_words,
        "max_span_words_tried": self.max_span_words_tried,
    })
    return config


class _Words:
  """The words of a batch and their segments, indexed by word.

  Attributes (int32 unless said, `[batch, seq_len]`; word arrays hold the
  sequence's words first, padding after):
    candidates: bool, tokens that may be masked.
    index: each candidate token's word (-1 for other tokens).
    count: `[batch]`, words per sequence.
    tokens: tokens per word.
    tokens_before: tokens of the words before each word.
    segment_end: one past the last word of each word's segment (a segment:
      the words between two non-candidate tokens).
  """

  def __init__(self, input_word_ids, input_mask, excluded_token_ids,
               is_continuation):
    batch_size = tf.shape(input_word_ids)[0]
    seq_len = tf.shape(input_word_ids)[1]
    candidates = dynamic_masking.candidate_tokens(
        input_word_ids, input_mask, excluded_token_ids)
    vocab_size = tf.shape(is_continuation, out_type=input_word_ids.dtype)[0]
    continuation = tf.logical_and(
        candidates,
        tf.gather(is_continuation,
                  tf.clip_by_value(input_word_ids, 0, vocab_size - 1)))
    after_candidate = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
    word_start = tf.logical_and(
        candidates,
        tf.logical_or(tf.logical_not(continuation),
                      tf.logical_not(after_candidate)))
    segment_start = tf.logical_and(candidates,
                                   tf.logical_not(after_candidate))
    index = tf.cumsum(tf.cast(word_start, tf.int32), axis=1) - 1
    index = tf.where(candidates, index, -1)
    segment = tf.cumsum(tf.cast(segment_start, tf.int32), axis=1) - 1

    # Per-word sums over flat ids row * seq_len + word; other tokens go to
    # one extra bucket, dropped.
    rows = tf.range(batch_size)[:, tf.newaxis] * seq_len
    buckets = batch_size * seq_len
    word_ids = tf.where(candidates, rows + index, buckets)
    tokens = tf.math.unsorted_segment_sum(
        tf.cast(candidates, tf.int32), word_ids, buckets + 1)[:-1]
    tokens = tf.reshape(tokens, [batch_size, seq_len])
    # Each segment's last word, then each word's segment.
    segment_ids = tf.where(candidates, rows + segment, buckets)
    segment_last = tf.math.unsorted_segment_max(index, segment_ids,
                                                buckets + 1)[:-1]
    word_segment = tf.math.unsorted_segment_max(
        tf.where(candidates, segment, -1), word_ids, buckets + 1)[:-1]
    segment_last = tf.reshape(segment_last, [batch_size, seq_len])
    word_segment = tf.reshape(word_segment, [batch_size, seq_len])
    self.candidates = candidates
    self.index = index
    self.count = tf.reduce_sum(tf.cast(word_start, tf.int32), axis=-1)
    self.tokens = tokens
    self.tokens_before = tf.cumsum(tokens, axis=1, exclusive=True)
    self.segment_end = 1 + tf.gather(
        segment_last, tf.maximum(word_segment, 0), batch_dims=1)
