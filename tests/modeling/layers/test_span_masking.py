"""Span masking (SpanBERT's scheme): each rule has a test that fails without it.

The rules: span lengths from a geometric distribution clipped at 10 words
(mean 3.8), whole words, no span across a special token or padding, the
masking budget of token masking, one [MASK]-or-keep decision per span, the
same masks for the same seed (what makes a resumed run draw the same masks).
"""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling.layers import dynamic_masking
from official_electra.modeling.layers import span_masking
from tests.modeling import tiny

# A vocabulary of 60 ids: 0-4 special, 5-39 word starts, 40-59 `##` pieces.
VOCAB_SIZE = 60
CONTINUATION_IDS = list(range(40, 60))


def make_layer(seq_len=128, mask_prob=0.15, max_span_words=10, **kwargs):
  return span_masking.SpanMasking(
      mask_token_id=tiny.MASK_ID, excluded_token_ids=tiny.SPECIAL_IDS,
      continuation_token_ids=CONTINUATION_IDS, vocab_size=VOCAB_SIZE,
      max_predictions_per_seq=dynamic_masking.max_predictions_per_seq(
          seq_len, mask_prob),
      mask_prob=mask_prob, max_span_words=max_span_words, **kwargs)


def text_batch(batch_size=32, seq_len=128, seed=0, continuation_share=0.4):
  """`[CLS] A [SEP] B [SEP] [PAD]...` rows of words of 1-4 pieces.

  Segment lengths, the padding and the share of `##` pieces vary by row; a
  `##` piece sometimes directly follows `[CLS]` or `[SEP]` (it then starts a
  word).
  """
  rng = np.random.default_rng(seed)
  ids = np.zeros((batch_size, seq_len), np.int32)
  for row in range(batch_size):
    real = int(rng.integers(seq_len // 2, seq_len + 1))
    first = int(rng.integers(2, real - 3))
    starts = rng.integers(5, 40, size=real)
    pieces = rng.integers(40, 60, size=real)
    body = np.where(rng.random(real) < continuation_share, pieces, starts)
    ids[row, :real] = body
    ids[row, 0] = tiny.CLS_ID
    ids[row, first] = tiny.SEP_ID
    ids[row, real - 1] = tiny.SEP_ID
  mask = (ids != tiny.PAD_ID).astype(np.int32)
  return tf.constant(ids), tf.constant(mask)


def span_list(token_span):
  """`(row, positions)` of each span, from `draw_spans`' output."""
  spans = []
  for row, row_spans in enumerate(token_span):
    for span in np.unique(row_spans[row_spans >= 0]):
      spans.append((row, np.flatnonzero(row_spans == span)))
  return spans


def is_word_start(ids, row, position):
  """A token starts a word: not a `##` piece, or right after a special."""
  return (ids[row, position] not in CONTINUATION_IDS or
          ids[row, position - 1] in tiny.SPECIAL_IDS)


def words_in(ids, row, positions):
  return sum(is_word_start(ids, row, position) for position in positions)


def many_spans(layer, ids, mask, num_draws):
  return [layer.draw_spans(ids, mask, tf.constant([draw, 11], tf.int64)).numpy()
          for draw in range(num_draws)]


def test_span_lengths_follow_the_clipped_geometric_distribution():
  expected = span_masking.span_length_probabilities(0.2, 10)
  lengths = span_masking.sample_span_lengths(
      0.2, 10, [200_000], tf.constant([3, 4], tf.int64)).numpy()
  assert lengths.min() == 1 and lengths.max() == 10
  counts = np.bincount(lengths, minlength=11)[1:] / lengths.size
  np.testing.assert_allclose(counts, expected, atol=0.004)
  # SpanBERT's 3.8: sum of l p (1-p)^(l-1) over 1..10, renormalised.
  assert span_masking.mean_span_length(0.2, 10) == pytest.approx(3.797,
                                                                 abs=1e-3)
  assert lengths.mean() == pytest.approx(3.797, abs=0.02)
  # Unclipped, the mean would be 1/p = 5.
  assert span_masking.mean_span_length(0.2, 1000) == pytest.approx(5.0,
                                                                   abs=1e-3)


def test_spans_are_whole_words_within_one_segment_and_at_most_ten_words():
  ids, mask = text_batch()
  layer = make_layer()
  token_spans = many_spans(layer, ids, mask, 30)
  ids = ids.numpy()
  word_counts = []
  for token_span in token_spans:
    for row, positions in span_list(token_span):
      # Contiguous tokens: a span never jumps over [SEP] to the next segment.
      np.testing.assert_array_equal(np.diff(positions), 1)
      assert not np.isin(ids[row, positions], tiny.SPECIAL_IDS).any()
      # Whole words: it starts at a word's first piece and the token after it
      # does not continue its last word.
      assert is_word_start(ids, row, positions[0])
      after = positions[-1] + 1
      assert after == ids.shape[1] or is_word_start(ids, row, after) or (
          ids[row, after] in tiny.SPECIAL_IDS)
      word_counts.append(words_in(ids, row, positions))
  assert max(word_counts) <= 10
  # Spans of several words exist (the test is not about single words).
  assert np.mean(word_counts) > 1.5


def test_long_segments_give_spans_near_the_distributions_mean():
  # Single-piece words, one long segment, a budget of 77 tokens: spans are
  # cut only by the budget, by a masked word ahead or by the segment's end.
  seq_len = 512
  rng = np.random.default_rng(5)
  ids = rng.integers(5, 40, size=(16, seq_len)).astype(np.int32)
  ids[:, 0], ids[:, -1] = tiny.CLS_ID, tiny.SEP_ID
  ids, mask = tf.constant(ids), tf.ones_like(tf.constant(ids))
  layer = make_layer(seq_len=seq_len)
  lengths = [len(positions)
             for token_span in many_spans(layer, ids, mask, 10)
             for _, positions in span_list(token_span)]
  assert max(lengths) == 10
  # Cut spans pull the mean below 3.8; without the clip at 10 it is above 4.
  assert 3.0 < np.mean(lengths) < 3.8


def test_masked_tokens_never_exceed_the_budget_and_usually_meet_it():
  ids, mask = text_batch(batch_size=64)
  layer = make_layer()
  num_slots = layer.max_predictions_per_seq
  budget = np.clip(np.round(mask.numpy().sum(axis=1) * 0.15), 1, num_slots)
  met = []
  for draw in range(20):
    outputs = layer(ids, mask, seed=tf.constant([draw, 5], tf.int64))
    masked = outputs["masked_weights"].numpy().sum(axis=1)
    assert (masked <= budget).all()
    met.append(masked == budget)
  assert np.mean(met) > 0.95


def test_whole_words_masks_one_word_per_span():
  ids, mask = text_batch()
  layer = make_layer(max_span_words=1)
  ids_np = ids.numpy()
  spans = [span for token_span in many_spans(layer, ids, mask, 10)
           for span in span_list(token_span)]
  assert all(words_in(ids_np, row, positions) == 1
             for row, positions in spans)
  # Words of several pieces are masked whole.
  assert max(len(positions) for _, positions in spans) > 1


def test_outputs_keep_the_dynamic_masking_contract():
  ids, mask = text_batch()
  layer = make_layer()
  ids_np = ids.numpy()
  kept_spans = masked_spans = 0
  for draw in range(20):
    seed = tf.constant([draw, 9], tf.int64)
    outputs = {key: value.numpy() for key, value in
               layer(ids, mask, seed=seed).items()}
    span_seed = tf.random.experimental.stateless_split(seed, 2)[0]
    token_span = layer.draw_spans(ids, mask, span_seed).numpy()
    for row in range(ids_np.shape[0]):
      real = outputs["masked_weights"][row] > 0
      positions = outputs["masked_positions"][row][real]
      np.testing.assert_array_equal(positions,
                                    np.flatnonzero(token_span[row] >= 0))
      np.testing.assert_array_equal(outputs["masked_ids"][row][real],
                                    ids_np[row, positions])
      assert (outputs["masked_positions"][row][~real] == 0).all()
      new = outputs["masked_input_ids"][row]
      unchanged = np.ones(ids_np.shape[1], bool)
      unchanged[positions] = False
      np.testing.assert_array_equal(new[unchanged], ids_np[row, unchanged])
      # One decision per span: all [MASK] or all kept, never a random token.
      for span in np.unique(token_span[row][token_span[row] >= 0]):
        tokens = new[token_span[row] == span]
        if (tokens == tiny.MASK_ID).all():
          masked_spans += 1
        else:
          np.testing.assert_array_equal(tokens,
                                        ids_np[row, token_span[row] == span])
          kept_spans += 1
  assert kept_spans / (kept_spans + masked_spans) == pytest.approx(0.15,
                                                                   abs=0.03)


def test_the_same_seed_draws_the_same_masks_and_another_seed_others():
  ids, mask = text_batch()
  layer = make_layer()
  first = layer(ids, mask, seed=tf.constant([7, 1], tf.int64))
  again = make_layer()(ids, mask, seed=tf.constant([7, 1], tf.int64))
  other = layer(ids, mask, seed=tf.constant([8, 1], tf.int64))
  for key in first:
    np.testing.assert_array_equal(first[key].numpy(), again[key].numpy())
  assert not np.array_equal(first["masked_positions"].numpy(),
                            other["masked_positions"].numpy())


def test_runs_in_tf_data_and_under_xla_and_round_trips():
  ids, mask = text_batch(batch_size=8)
  layer = make_layer()
  seed = tf.constant([2, 3], tf.int64)

  def apply(ids, mask):
    return layer(ids, mask, seed=seed)

  eager = apply(ids, mask)
  from_dataset = next(iter(tf.data.Dataset.from_tensors((ids, mask)).map(
      apply)))
  for key in eager:
    np.testing.assert_array_equal(eager[key].numpy(), from_dataset[key].numpy())
  # XLA's random bits differ from the kernels'; the rules hold all the same.
  compiled = tf.function(apply, jit_compile=True)(ids, mask)
  weights = compiled["masked_weights"].numpy()
  budget = np.clip(np.round(mask.numpy().sum(axis=1) * 0.15), 1,
                   layer.max_predictions_per_seq)
  assert (weights.sum(axis=1) <= budget).all()
  assert weights.sum() > 0.9 * budget.sum()
  rows = np.nonzero(weights > 0)[0]
  chosen = compiled["masked_positions"].numpy()[weights > 0]
  assert not np.isin(ids.numpy()[rows, chosen], tiny.SPECIAL_IDS).any()
  restored = span_masking.SpanMasking.from_config(layer.get_config())
  assert restored.get_config() == layer.get_config()
  np.testing.assert_array_equal(
      restored(ids, mask, seed=seed)["masked_input_ids"].numpy(),
      eager["masked_input_ids"].numpy())


def test_rows_without_candidates_mask_nothing():
  ids = np.full((2, 16), tiny.PAD_ID, np.int32)
  ids[:, 0], ids[:, 1] = tiny.CLS_ID, tiny.SEP_ID
  ids, mask = tf.constant(ids), tf.constant((ids != tiny.PAD_ID).astype(
      np.int32))
  outputs = make_layer(seq_len=16)(ids, mask, seed=tf.constant([1, 1],
                                                               tf.int64))
  assert outputs["masked_weights"].numpy().sum() == 0
  np.testing.assert_array_equal(outputs["masked_input_ids"].numpy(),
                                ids.numpy())


def test_continuation_ids_are_the_vocabularys_double_hash_pieces():
  tokens = ["[PAD]", "the", "##s", "##", "#x", "##ing"]
  assert span_masking.continuation_token_ids(tokens) == [2, 5]


@pytest.mark.parametrize("bad", [
    {"span_p": 0.0}, {"max_span_words": 0}, {"mask_prob": 0.0},
    {"continuation_token_ids": [VOCAB_SIZE]}])
def test_bad_settings_are_rejected(bad):
  settings = dict(mask_token_id=tiny.MASK_ID,
                  excluded_token_ids=tiny.SPECIAL_IDS,
                  continuation_token_ids=CONTINUATION_IDS,
                  vocab_size=VOCAB_SIZE, max_predictions_per_seq=19)
  settings.update(bad)
  with pytest.raises(ValueError):
    span_masking.SpanMasking(**settings)
