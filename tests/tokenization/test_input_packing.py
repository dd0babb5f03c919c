"""Tests of pack_segments: BERT's truncation and the packed layout."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from official_electra.tokenization import input_packing

_CLS, _SEP, _PAD = 101, 102, 0


def _bert_truncate(first, second, budget):
  """BERT's `_truncate_seq_pair`: pop from the longer, B on a tie."""
  first, second = list(first), list(second)
  while len(first) + len(second) > budget:
    (first if len(first) > len(second) else second).pop()
  return first, second


def test_truncated_lengths_match_bert_loop():
  for first_length, second_length, budget in itertools.product(
      range(12), range(12), range(1, 14)):
    expected = _bert_truncate(range(first_length), range(second_length), budget)
    kept = input_packing.truncated_lengths(
        tf.constant([first_length]), tf.constant([second_length]), budget)
    assert [int(k[0]) for k in kept] == [len(e) for e in expected]


def _expected_packing(first, second, seq_length):
  if second is None:
    first = first[:seq_length - 2]
    ids = [_CLS] + first + [_SEP]
    types = [0] * len(ids)
  else:
    first, second = _bert_truncate(first, second, seq_length - 3)
    ids = [_CLS] + first + [_SEP] + second + [_SEP]
    types = [0] * (len(first) + 2) + [1] * (len(second) + 1)
  padding = seq_length - len(ids)
  return ids + [_PAD] * padding, [1] * len(ids) + [0] * padding, types + [0] * padding


@pytest.mark.parametrize("two_segments", [False, True])
def test_pack_segments_layout(two_segments):
  rng = np.random.default_rng(0)
  seq_length = 10
  firsts = [rng.integers(1000, 2000, rng.integers(0, 12)).tolist()
            for _ in range(40)]
  seconds = [rng.integers(1000, 2000, rng.integers(0, 12)).tolist()
             for _ in range(40)]
  segments = [tf.ragged.constant(firsts, dtype=tf.int64)]
  if two_segments:
    segments.append(tf.ragged.constant(seconds, dtype=tf.int64))

  @tf.function
  def pack(*segments):
    return input_packing.pack_segments(list(segments), seq_length, cls_id=_CLS,
                                       sep_id=_SEP, pad_id=_PAD)

  for packed in (pack(*segments),
                 input_packing.pack_segments(segments, seq_length, _CLS, _SEP,
                                             _PAD)):
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
      assert packed[name].dtype == tf.int32
      assert packed[name].shape == (40, seq_length)
    for row, (first, second) in enumerate(zip(firsts, seconds)):
      expected = _expected_packing(first, second if two_segments else None,
                                   seq_length)
      assert packed["input_word_ids"][row].numpy().tolist() == expected[0]
      assert packed["input_mask"][row].numpy().tolist() == expected[1]
      assert packed["input_type_ids"][row].numpy().tolist() == expected[2]


def test_pack_segments_rejects_bad_arguments():
  segment = tf.ragged.constant([[1]])
  with pytest.raises(ValueError, match="1 or 2 segments"):
    input_packing.pack_segments([segment] * 3, 8, _CLS, _SEP, _PAD)
  with pytest.raises(ValueError, match="no room"):
    input_packing.pack_segments([segment] * 2, 2, _CLS, _SEP, _PAD)
