"""Tests of ExamplePacker: the original tool's packing rules."""

import random

import numpy as np

from tfrecords_tools import example_packer

_CLS, _SEP, _PAD = 101, 102, 0


def _documents(rng, num_documents, max_sentence_length):
  """Sentences with distinct token ids, and document ends."""
  lengths, ends = [], []
  for _ in range(num_documents):
    count = rng.randint(1, 12)
    lengths += [rng.randint(0, max_sentence_length) for _ in range(count)]
    ends += [False] * (count - 1) + [True]
  row_splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
  token_ids = np.arange(1000, 1000 + row_splits[-1], dtype=np.int32)
  return token_ids, row_splits, ends


def _check_layout(packed, max_seq_length):
  """Every example is [CLS] A [SEP] (B [SEP]) [PAD]*; returns kept ids."""
  kept = []
  for ids, mask, segments in zip(packed.input_ids, packed.input_mask,
                                 packed.segment_ids):
    length = int(mask.sum())
    assert mask.tolist() == [1] * length + [0] * (max_seq_length - length)
    assert ids[0] == _CLS and ids[length - 1] == _SEP
    assert (ids[length:] == _PAD).all()
    separators = [i for i in range(length) if ids[i] == _SEP]
    assert len(separators) in (1, 2)
    first_end = separators[0]
    assert (segments[:first_end + 1] == 0).all()
    assert (segments[first_end + 1:length] == 1).all()
    assert (segments[length:] == 0).all()
    if len(separators) == 2:
      assert separators[1] == length - 1 and length - 1 > first_end + 1
    body = [int(i) for i in ids[:length] if i not in (_CLS, _SEP)]
    assert all(i >= 1000 for i in body)
    kept += body
  return kept


def test_layout_and_token_accounting():
  rng = random.Random(0)
  max_seq_length = 32
  token_ids, row_splits, ends = _documents(rng, 300, 20)
  packer = example_packer.ExamplePacker(max_seq_length, _CLS, _SEP, _PAD,
                                        random.Random(1))
  packed = packer.pack(token_ids, row_splits, ends)
  kept = _check_layout(packed, max_seq_length)
  assert packed.num_tokens == len(token_ids)
  assert len(kept) == packed.num_tokens - packed.num_truncated_tokens
  assert len(set(kept)) == len(kept)  # Each corpus token at most once.


def test_examples_never_span_documents():
  rng = random.Random(2)
  token_ids, row_splits, ends = _documents(rng, 200, 6)
  document_of_token = np.zeros(len(token_ids), np.int64)
  document = 0
  for start, end, document_end in zip(row_splits[:-1], row_splits[1:], ends):
    document_of_token[start:end] = document
    document += document_end
  packed = example_packer.ExamplePacker(64, _CLS, _SEP, _PAD,
                                        random.Random(3)).pack(
                                            token_ids, row_splits, ends)
  for ids in packed.input_ids:
    body = ids[(ids >= 1000)] - 1000
    assert len(set(document_of_token[body])) == 1


def test_long_sentence_is_truncated_and_counted():
  token_ids = np.arange(1000, 1300, dtype=np.int32)
  packed = example_packer.ExamplePacker(16, _CLS, _SEP, _PAD,
                                        random.Random(0)).pack(
                                            token_ids, np.array([0, 300]),
                                            [True])
  assert packed.input_ids.shape == (1, 16)
  assert packed.input_ids[0].tolist() == [_CLS] + list(range(1000, 1014)) + [_SEP]
  assert packed.num_truncated_tokens == 300 - 14


def _assert_binomial_rate(successes, trials, rate, wrong_rate):
  """`successes / trials` within 4 sigma of `rate`, a window `wrong_rate` misses.

  The power check: the 4-sigma windows of the two rates do not overlap, so a
  packer drawing at `wrong_rate` fails this assertion (with probability above
  1 - 1e-4) while the right one passes it (also above 1 - 1e-4).
  """
  sigma = (rate * (1 - rate) / trials) ** 0.5
  wrong_sigma = (wrong_rate * (1 - wrong_rate) / trials) ** 0.5
  assert abs(wrong_rate - rate) > 4 * sigma + 4 * wrong_sigma
  assert abs(successes / trials - rate) < 4 * sigma, (successes, trials, rate)


def test_random_choices_follow_the_original_rates():
  # One long document of one-token sentences: each example holds exactly its
  # target's tokens, consecutive ids, so the target of an example is the gap
  # between its first id and the next example's; a two-segment example always
  # has a B (A takes at most (target - 3) // 2 of its >= 5 tokens).
  max_seq_length = 32
  num_sentences = 190_000
  packed = example_packer.ExamplePacker(
      max_seq_length, _CLS, _SEP, _PAD, random.Random(5)).pack(
          np.arange(1000, 1000 + num_sentences, dtype=np.int32),
          np.arange(num_sentences + 1), [False] * (num_sentences - 1) + [True])
  first_ids = packed.input_ids[:, 1]
  targets = np.diff(first_ids)  # The last example ends with the document.
  has_b = (packed.segment_ids.max(axis=1) == 1)[:-1]
  trials = len(targets)
  assert trials > 5000
  # Rule 2: 10% single-segment examples (not 15%).
  _assert_binomial_rate((~has_b).sum(), trials, 0.1, wrong_rate=0.15)
  # Rule 1: with probability 0.05 the next target is uniform in [5, 32], so it
  # differs from 32 with probability 0.05 * 27 / 28.
  random_target_rate = 0.05 * (1 - 1 / (max_seq_length - 5 + 1))
  _assert_binomial_rate((targets[1:] != max_seq_length).sum(), trials - 1,
                        random_target_rate, wrong_rate=0.1)
  assert targets.min() >= 5 and targets.max() <= max_seq_length
  # Rule 2: A aims at (32 - 3) // 2 = 14 tokens; the sentence that would reach
  # the aim joins A with probability 0.5, so A holds 13 or 14 tokens.
  full_two_segment = has_b & (targets == max_seq_length)
  first_lengths = (packed.segment_ids[:-1][full_two_segment] == 0).sum(
      axis=1) - 2  # [CLS] and the first [SEP] are in segment 0.
  assert set(first_lengths) == {13, 14}
  _assert_binomial_rate((first_lengths == 14).sum(), len(first_lengths), 0.5,
                        wrong_rate=0.4)


def test_same_seed_same_examples():
  token_ids, row_splits, ends = _documents(random.Random(6), 100, 20)
  packs = [example_packer.ExamplePacker(32, _CLS, _SEP, _PAD,
                                        random.Random(seed)).pack(
                                            token_ids, row_splits, ends)
           for seed in (7, 7, 8)]
  np.testing.assert_array_equal(packs[0].input_ids, packs[1].input_ids)
  assert not np.array_equal(packs[0].segment_ids, packs[2].segment_ids)
